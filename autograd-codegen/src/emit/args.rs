//! The arguments of `autograd_ops!(...)`.

use proc_macro2::Span;

/// The arguments of `autograd_ops!(...)`.
#[derive(Default)]
pub struct MacroArgs {
    /// The derivatives file, or `None` with inline `yaml = "..."`.
    pub derivatives: Option<syn::LitStr>,
    /// `yaml = "..."`: the derivatives YAML inline.
    pub yaml: Option<syn::LitStr>,
    /// `native = "..."`.
    pub native: Option<syn::LitStr>,
    /// `helpers = path`.
    pub helpers: Option<syn::Path>,
    /// `raw_helpers = path`: the helpers on raw tensors (backward without `create_graph`).
    pub raw_helpers: Option<syn::Path>,
    /// `crate = path`.
    pub krate: Option<syn::Path>,
    /// `types = { Scalar = f32, ... }`.
    pub types: Vec<(String, syn::Type)>,
    /// `fallible = true`: kernels return `Result<_, Self::Error>`.
    pub fallible: bool,
    /// `error_from = path`: the kernels' error type converts from this one.
    pub error_from: Option<syn::Path>,
    /// `formulas = "cpp"`: the formulas are PyTorch's C++ (`"rust"`, the default: Rust).
    pub cpp: bool,
    /// `header = "..."`: with C++ formulas, the header declaring the helpers.
    pub header: Option<syn::LitStr>,
}

/// `formulas = "rust" | "cpp"`: whether formulas are PyTorch's C++.
fn parse_dialect(input: syn::parse::ParseStream<'_>) -> syn::Result<bool> {
    let v: syn::LitStr = input.parse()?;
    match v.value().as_str() {
        "cpp" => Ok(true),
        "rust" => Ok(false),
        _ => Err(syn::Error::new(
            v.span(),
            "`formulas` is \"rust\" (the default) or \"cpp\" (PyTorch's C++)",
        )),
    }
}

impl syn::parse::Parse for MacroArgs {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let mut args = MacroArgs::default();
        if input.peek(syn::LitStr) {
            args.derivatives = Some(input.parse()?);
        }
        let mut first = args.derivatives.is_none();
        while !input.is_empty() {
            if !first {
                input.parse::<syn::Token![,]>()?;
            }
            first = false;
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = if input.peek(syn::Token![crate]) {
                input.parse::<syn::Token![crate]>()?;
                syn::Ident::new("crate", Span::call_site())
            } else {
                input.parse()?
            };
            input.parse::<syn::Token![=]>()?;
            match key.to_string().as_str() {
                "native" => args.native = Some(input.parse()?),
                "yaml" => args.yaml = Some(input.parse()?),
                "helpers" => args.helpers = Some(input.parse()?),
                "raw_helpers" => args.raw_helpers = Some(input.parse()?),
                "crate" => args.krate = Some(input.parse()?),
                "fallible" => args.fallible = input.parse::<syn::LitBool>()?.value,
                "error_from" => args.error_from = Some(input.parse()?),
                "header" => args.header = Some(input.parse()?),
                "formulas" => args.cpp = parse_dialect(input)?,
                "types" => {
                    let content;
                    syn::braced!(content in input);
                    while !content.is_empty() {
                        let name: syn::Ident = content.parse()?;
                        content.parse::<syn::Token![=]>()?;
                        let ty: syn::Type = content.parse()?;
                        args.types.push((name.to_string(), ty));
                        if !content.is_empty() {
                            content.parse::<syn::Token![,]>()?;
                        }
                    }
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown argument `{other}`: expected `native = \"...\"`, `yaml = \"...\"`, `helpers = path`, `raw_helpers = path`, `crate = path`, `types = {{ Scalar = f32 }}`, `fallible = true`, `error_from = path`, `formulas = \"cpp\"` or `header = \"...\"`"
                        ),
                    ));
                }
            }
        }
        if let Some(p) = args.error_from.as_ref().filter(|_| !args.fallible) {
            return Err(syn::Error::new_spanned(
                p,
                "`error_from` bounds the kernels' error type, which only `fallible = true` has",
            ));
        }
        if let Some(h) = args.header.as_ref().filter(|_| !args.cpp) {
            return Err(syn::Error::new(
                h.span(),
                "`header` declares the helpers of C++ formulas: add `formulas = \"cpp\"`",
            ));
        }
        if args.derivatives.is_some() == args.yaml.is_some() {
            return Err(input.error(
                "expected the derivatives.yaml path as a string, or `yaml = \"...\"` (not both)",
            ));
        }
        Ok(args)
    }
}
