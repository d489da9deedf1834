//! Which composite and decomposition functions the emitters can serve.

use super::Plan;
use crate::diagnostics::Ctxt;
use crate::model::schema::SchemaKind;

/// A composite function's kernel lives in the helpers module, and only functional and
/// in-place composites are supported (an out= one would need a kernel to write into; an
/// in-place one, as `resize_`, writes through the runtime itself).
/// The same for a decomposition (`CompositeExplicitAutograd`), which also cannot be a
/// `CompositeImplicitAutograd` function (that has no kernel to give a default).
pub(crate) fn check_composites(p: &Plan<'_>, has_helpers: bool, cx: &mut Ctxt) {
    for f in p.functions.iter().filter(|f| f.decomposition.is_some()) {
        let problem = if f.kind != SchemaKind::Functional {
            "only functional functions can name a CompositeExplicitAutograd kernel here (an \
             in-place or out= kernel defaults to its functional one)"
        } else if f.nf.composite_kernel.is_some() {
            "`dispatch:` names both a CompositeImplicitAutograd and a CompositeExplicitAutograd \
             kernel; keep one"
        } else if !has_helpers {
            "a CompositeExplicitAutograd kernel (the backend kernel's default) is a function \
             of the helpers module: set `helpers = path::to::module`"
        } else {
            continue;
        };
        cx.error(&f.nf.loc, Some(&f.nf.schema), problem);
    }
    for f in p.functions.iter().filter(|f| f.composite.is_some()) {
        let problem = if !matches!(f.kind, SchemaKind::Functional | SchemaKind::Inplace) {
            "only functional and in-place functions can be CompositeImplicitAutograd here (an \
             out= one needs a kernel to write into)"
        } else if !has_helpers {
            "a CompositeImplicitAutograd function's kernel is a function of the helpers \
             module: set `helpers = path::to::module`"
        } else {
            continue;
        };
        cx.error(&f.nf.loc, Some(&f.nf.schema), problem);
    }
}
