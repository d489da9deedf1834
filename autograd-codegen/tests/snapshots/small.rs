#[allow(unused_imports)]
use ::autograd::support::__prelude as __ag;
/// The raw operations of the tensor library, one per native function: implement it
/// for the raw tensor type (`autograd_ops!` generated this trait).
#[allow(clippy::all)]
pub trait Backend: __ag::Tensor {
    ///`mul.Tensor(Tensor self, Tensor other) -> Tensor`
    fn mul_tensor(self_: &Self, other: &Self) -> Self;
    ///`exp(Tensor self) -> Tensor`
    fn exp(self_: &Self) -> Self;
    ///`sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`
    fn sum(self_: &Self, dtype: __ag::Option<__ag::types::ScalarType>) -> Self;
    ///`expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)`
    fn expand(self_: &Self, size: &[i64], implicit: bool) -> Self;
    ///`max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`
    fn max_dim(self_: &Self, dim: i64, keepdim: bool) -> (Self, Self);
}
///Backward of `mul.Tensor(Tensor self, Tensor other) -> Tensor` (generated from derivatives.yaml).
#[allow(non_camel_case_types, non_snake_case, clippy::all)]
pub struct MulBackward0<T: Backend> {
    pub self_: __ag::SavedVariable<T>,
    pub other: __ag::SavedVariable<T>,
    /// Which differentiable inputs needed a gradient when the op ran.
    pub __needs: [bool; 2usize],
    #[doc(hidden)]
    pub __marker: __ag::PhantomData<fn() -> T>,
}
#[allow(clippy::all)]
impl<T: Backend> __ag::Node<T> for MulBackward0<T> {
    fn name(&self) -> &str {
        "MulBackward0"
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply(
        &mut self,
        grads: __ag::VariableList<T>,
    ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
        let mut __out = __ag::VariableList::<T>::with_len(2usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(__out);
        }
        let __ag::Some(grad) = grads[0].clone() else { return Ok(__out) };
        if self.__needs[1usize] {
            let self_ = self.self_.unpack()?;
            let __r = { mul_tensor(&grad, &self_) }; // tests/fixtures/small.yaml:4: `mul.Tensor(Tensor self, Tensor other) -> Tensor`: formula for `other`
            __out[1usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        if self.__needs[0usize] {
            let other = self.other.unpack()?;
            let __r = { mul_tensor(&grad, &other) }; // tests/fixtures/small.yaml:3: `mul.Tensor(Tensor self, Tensor other) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        Ok(__out)
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply_raw(
        &mut self,
        grads: &mut __ag::RawList<T>,
        __out: &mut __ag::RawList<T>,
    ) -> __ag::Result<(), __ag::AutogradError> {
        #[allow(unused_imports)]
        use self::raw::*;
        __out.reset(2usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(());
        }
        let __ag::Some(grad) = grads[0].take() else { return Ok(()) };
        if self.__needs[1usize] {
            let __self__data = self.self_.data_ref()?;
            let self_: &T = &__self__data;
            let __r = { mul_tensor(&grad, self_) }; // tests/fixtures/small.yaml:4: `mul.Tensor(Tensor self, Tensor other) -> Tensor`: formula for `other`
            __out[1usize] = __ag::IntoRawGrad::<T>::into_raw_grad(__r)?;
        }
        if self.__needs[0usize] {
            let __other_data = self.other.data_ref()?;
            let other: &T = &__other_data;
            let __r = { mul_tensor(&grad, other) }; // tests/fixtures/small.yaml:3: `mul.Tensor(Tensor self, Tensor other) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoRawGrad::<T>::into_raw_grad(__r)?;
        }
        Ok(())
    }
    fn release_variables(&mut self) {
        self.self_.reset();
        self.other.reset();
    }
    #[allow(unused_variables)]
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {
        f("self", &self.self_);
        f("other", &self.other);
    }
    #[allow(unused_variables)]
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {
        f("self", &mut self.self_);
        f("other", &mut self.other);
    }
}
///Backward of `exp(Tensor self) -> Tensor` (generated from derivatives.yaml).
#[allow(non_camel_case_types, non_snake_case, clippy::all)]
pub struct ExpBackward0<T: Backend> {
    pub result: __ag::SavedVariable<T>,
    /// Which differentiable inputs needed a gradient when the op ran.
    pub __needs: [bool; 1usize],
    #[doc(hidden)]
    pub __marker: __ag::PhantomData<fn() -> T>,
}
#[allow(clippy::all)]
impl<T: Backend> __ag::Node<T> for ExpBackward0<T> {
    fn name(&self) -> &str {
        "ExpBackward0"
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply(
        &mut self,
        grads: __ag::VariableList<T>,
    ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
        let mut __out = __ag::VariableList::<T>::with_len(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(__out);
        }
        let __ag::Some(grad) = grads[0].clone() else { return Ok(__out) };
        if self.__needs[0usize] {
            let result = self.result.unpack()?;
            let __r = { mul_tensor(&grad, &result) }; // tests/fixtures/small.yaml:7: `exp(Tensor self) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        Ok(__out)
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply_raw(
        &mut self,
        grads: &mut __ag::RawList<T>,
        __out: &mut __ag::RawList<T>,
    ) -> __ag::Result<(), __ag::AutogradError> {
        #[allow(unused_imports)]
        use self::raw::*;
        __out.reset(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(());
        }
        let __ag::Some(grad) = grads[0].take() else { return Ok(()) };
        if self.__needs[0usize] {
            let __result_data = self.result.data_ref()?;
            let result: &T = &__result_data;
            let __r = { mul_tensor(&grad, result) }; // tests/fixtures/small.yaml:7: `exp(Tensor self) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoRawGrad::<T>::into_raw_grad(__r)?;
        }
        Ok(())
    }
    fn release_variables(&mut self) {
        self.result.reset();
    }
    #[allow(unused_variables)]
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {
        f("result", &self.result);
    }
    #[allow(unused_variables)]
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {
        f("result", &mut self.result);
    }
}
///Backward of `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor` (generated from derivatives.yaml).
#[allow(non_camel_case_types, non_snake_case, clippy::all)]
pub struct SumBackward0<T: Backend> {
    pub self_sizes: __ag::Vec<i64>,
    /// Which differentiable inputs needed a gradient when the op ran.
    pub __needs: [bool; 1usize],
    #[doc(hidden)]
    pub __marker: __ag::PhantomData<fn() -> T>,
}
#[allow(clippy::all)]
impl<T: Backend> __ag::Node<T> for SumBackward0<T> {
    fn name(&self) -> &str {
        "SumBackward0"
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply(
        &mut self,
        grads: __ag::VariableList<T>,
    ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
        let mut __out = __ag::VariableList::<T>::with_len(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(__out);
        }
        let __ag::Some(grad) = grads[0].clone() else { return Ok(__out) };
        if self.__needs[0usize] {
            let self_sizes = &self.self_sizes[..];
            let __r = { expand(&grad, &self_sizes.iter().map(|d| *d as i64).collect::<Vec<_>>(), false) }; // tests/fixtures/small.yaml:11: `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        Ok(__out)
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply_raw(
        &mut self,
        grads: &mut __ag::RawList<T>,
        __out: &mut __ag::RawList<T>,
    ) -> __ag::Result<(), __ag::AutogradError> {
        #[allow(unused_imports)]
        use self::raw::*;
        __out.reset(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(());
        }
        let __ag::Some(grad) = grads[0].take() else { return Ok(()) };
        if self.__needs[0usize] {
            let self_sizes = &self.self_sizes[..];
            let __r = { expand(&grad, &self_sizes.iter().map(|d| *d as i64).collect::<Vec<_>>(), false) }; // tests/fixtures/small.yaml:11: `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`: formula for `self`
            __out[0usize] = __ag::IntoRawGrad::<T>::into_raw_grad(__r)?;
        }
        Ok(())
    }
    fn release_variables(&mut self) {}
    #[allow(unused_variables)]
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {}
    #[allow(unused_variables)]
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {}
}
///Backward of `expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)` (generated from derivatives.yaml).
#[allow(non_camel_case_types, non_snake_case, clippy::all)]
pub struct ExpandBackward0<T: Backend> {
    /// Which differentiable inputs needed a gradient when the op ran.
    pub __needs: [bool; 1usize],
    #[doc(hidden)]
    pub __marker: __ag::PhantomData<fn() -> T>,
}
#[allow(clippy::all)]
impl<T: Backend> __ag::Node<T> for ExpandBackward0<T> {
    fn name(&self) -> &str {
        "ExpandBackward0"
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply(
        &mut self,
        grads: __ag::VariableList<T>,
    ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
        #[allow(dead_code)]
        fn not_implemented(reason: &str) -> __ag::NotImplemented {
            __ag::NotImplemented::new("expand", reason)
        }
        #[allow(dead_code)]
        fn not_implemented_named(name: &str, reason: &str) -> __ag::NotImplemented {
            __ag::NotImplemented::new(name, reason)
        }
        let mut __out = __ag::VariableList::<T>::with_len(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(__out);
        }
        if self.__needs[0usize] {
            let __r = { not_implemented("expand backward") }; // tests/fixtures/small.yaml:15: `expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)`: formula for `self`
            __out[0usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        Ok(__out)
    }
    fn release_variables(&mut self) {}
    #[allow(unused_variables)]
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {}
    #[allow(unused_variables)]
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {}
}
///Backward of `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)` (generated from derivatives.yaml).
#[allow(non_camel_case_types, non_snake_case, clippy::all)]
pub struct MaxBackward0<T: Backend> {
    /// Which differentiable inputs needed a gradient when the op ran.
    pub __needs: [bool; 1usize],
    #[doc(hidden)]
    pub __marker: __ag::PhantomData<fn() -> T>,
}
#[allow(clippy::all)]
impl<T: Backend> __ag::Node<T> for MaxBackward0<T> {
    fn name(&self) -> &str {
        "MaxBackward0"
    }
    #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
    fn apply(
        &mut self,
        grads: __ag::VariableList<T>,
    ) -> __ag::Result<__ag::VariableList<T>, __ag::AutogradError> {
        #[allow(dead_code)]
        fn not_implemented(reason: &str) -> __ag::NotImplemented {
            __ag::NotImplemented::new("max", reason)
        }
        #[allow(dead_code)]
        fn not_implemented_named(name: &str, reason: &str) -> __ag::NotImplemented {
            __ag::NotImplemented::new(name, reason)
        }
        let mut __out = __ag::VariableList::<T>::with_len(1usize);
        if grads.iter().all(__ag::Option::is_none) {
            return Ok(__out);
        }
        if self.__needs[0usize] {
            let __r = { not_implemented("max.dim backward") }; // tests/fixtures/small.yaml:19: `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`: formula for `self`
            __out[0usize] = __ag::IntoGrad::<T>::into_grad(__r)?;
        }
        Ok(__out)
    }
    fn release_variables(&mut self) {}
    #[allow(unused_variables)]
    fn visit_saved(&self, f: &mut dyn FnMut(&str, &__ag::SavedVariable<T>)) {}
    #[allow(unused_variables)]
    fn visit_saved_mut(&mut self, f: &mut dyn FnMut(&str, &mut __ag::SavedVariable<T>)) {}
}
///Differentiable `mul.Tensor(Tensor self, Tensor other) -> Tensor`.
#[allow(clippy::all, unused_mut, non_snake_case)]
pub fn mul_tensor<T: Backend>(
    self_: &__ag::Variable<T>,
    other: &__ag::Variable<T>,
) -> __ag::Variable<T> {
    let __d_self_ = self_.data();
    let __r0 = other
        .with_data(|__d_other| <T as Backend>::mul_tensor(&__d_self_, &__d_other));
    let __needs = [self_.requires_grad(), other.requires_grad()];
    if !__ag::should_record_any(&__needs) {
        return {
            let __o0 = __ag::Variable::from_data(__r0);
            if __ag::is_forward_ad_enabled() {
                let _ = __ag::fw_forbid(&[self_, other], "mul", false)
                    .map_err(|__e| {
                        __ag::fw_poison(&__o0, &__e);
                        __e
                    });
            }
            __o0
        };
    }
    let __edges = [__ag::Some(self_), __ag::Some(other)];
    let __node = MulBackward0::<T> {
        self_: __ag::save_if(__needs[1usize], self_),
        other: __ag::save_if(__needs[0usize], other),
        __needs,
        __marker: __ag::PhantomData,
    };
    let ([__o0], __handle) = __ag::record_saving(
        __node,
        &__edges,
        [__r0],
        |__n, __s| {},
    );
    if __ag::is_forward_ad_enabled() {
        let _ = __ag::fw_forbid(&[self_, other], "mul", false)
            .map_err(|__e| {
                __ag::fw_poison(&__o0, &__e);
                __e
            });
    }
    __o0
}
///Differentiable `exp(Tensor self) -> Tensor`.
#[allow(clippy::all, unused_mut, non_snake_case)]
pub fn exp<T: Backend>(self_: &__ag::Variable<T>) -> __ag::Variable<T> {
    #[allow(
        clippy::all,
        unused_variables,
        unused_mut,
        unused_imports,
        unused_parens,
        non_snake_case
    )]
    fn __fw<T: Backend>(
        self_: &__ag::Variable<T>,
        __o0: &__ag::Variable<T>,
    ) -> __ag::Result<(), __ag::AutogradError> {
        use __ag::Conj as _;
        __ag::fw_propagate(
            __o0,
            &[self_],
            |__lvl| {
                let self_t = __ag::tangent_or_zeros(self_, __lvl)?;
                let result = __o0.clone();
                let __r = { mul_tensor(&self_t, &result) }; // tests/fixtures/small.yaml:8: `exp(Tensor self) -> Tensor`: forward formula for `result`
                __ag::IntoTangent::into_tangent(__r)
            },
        )?;
        __ag::Ok(())
    }
    let __r0 = self_.with_data(|__d_self_| <T as Backend>::exp(&__d_self_));
    let __needs = [self_.requires_grad()];
    if !__ag::should_record_any(&__needs) {
        return {
            let __o0 = __ag::Variable::from_data(__r0);
            if __ag::is_forward_ad_enabled() {
                let _ = __fw::<T>(self_, &__o0);
            }
            __o0
        };
    }
    let __edges = [__ag::Some(self_)];
    let __node = ExpBackward0::<T> {
        result: __ag::Default::default(),
        __needs,
        __marker: __ag::PhantomData,
    };
    let ([__o0], __handle) = __ag::record_saving(
        __node,
        &__edges,
        [__r0],
        |__n, __s| {
            __n.result = __s.save(0usize);
        },
    );
    if __ag::is_forward_ad_enabled() {
        let _ = __fw::<T>(self_, &__o0);
    }
    if let __ag::Some(__handle) = __handle {
        let __saved_result = __ag::SavedVariable::new(&__o0, true);
        __handle
            .with(|__n| {
                __n.result = __saved_result;
            });
    }
    __o0
}
///Differentiable `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`.
#[allow(clippy::all, unused_mut, non_snake_case)]
pub fn sum<T: Backend>(
    self_: &__ag::Variable<T>,
    dtype: __ag::Option<__ag::types::ScalarType>,
) -> __ag::Variable<T> {
    let __r0 = self_.with_data(|__d_self_| <T as Backend>::sum(&__d_self_, dtype));
    let __needs = [self_.requires_grad()];
    if !__ag::should_record_any(&__needs) {
        return {
            let __o0 = __ag::Variable::from_data(__r0);
            if __ag::is_forward_ad_enabled() {
                let _ = __ag::fw_forbid(&[self_], "sum", false)
                    .map_err(|__e| {
                        __ag::fw_poison(&__o0, &__e);
                        __e
                    });
            }
            __o0
        };
    }
    let __edges = [__ag::Some(self_)];
    let __node = SumBackward0::<T> {
        self_sizes: if __needs[0usize] {
            self_.shape().iter().map(|&d| d as i64).collect()
        } else {
            __ag::Vec::new()
        },
        __needs,
        __marker: __ag::PhantomData,
    };
    let ([__o0], __handle) = __ag::record_saving(
        __node,
        &__edges,
        [__r0],
        |__n, __s| {},
    );
    if __ag::is_forward_ad_enabled() {
        let _ = __ag::fw_forbid(&[self_], "sum", false)
            .map_err(|__e| {
                __ag::fw_poison(&__o0, &__e);
                __e
            });
    }
    __o0
}
///Differentiable `expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)`.
#[allow(clippy::all, unused_mut, non_snake_case)]
pub fn expand<T: Backend>(
    self_: &__ag::Variable<T>,
    size: &[i64],
    implicit: bool,
) -> __ag::Variable<T> {
    #[allow(clippy::all, unused_mut, non_snake_case)]
    fn __inner<T: Backend>(
        self_: &__ag::Variable<T>,
        size: &[i64],
        implicit: bool,
    ) -> __ag::Variable<T> {
        let __r0 = self_
            .with_data(|__d_self_| <T as Backend>::expand(&__d_self_, size, implicit));
        let __needs = [self_.requires_grad()];
        if !__ag::should_record_any(&__needs) {
            return {
                let __o0 = __ag::Variable::from_data(__r0);
                if __ag::is_forward_ad_enabled() {
                    let _ = __ag::fw_forbid(&[self_], "expand", false)
                        .map_err(|__e| {
                            __ag::fw_poison(&__o0, &__e);
                            __e
                        });
                }
                __o0
            };
        }
        let __edges = [__ag::Some(self_)];
        let __node = ExpandBackward0::<T> {
            __needs,
            __marker: __ag::PhantomData,
        };
        let ([__o0], __handle) = __ag::record_saving(
            __node,
            &__edges,
            [__r0],
            |__n, __s| {},
        );
        if __ag::is_forward_ad_enabled() {
            let _ = __ag::fw_forbid(&[self_], "expand", false)
                .map_err(|__e| {
                    __ag::fw_poison(&__o0, &__e);
                    __e
                });
        }
        __o0
    }
    let __o0 = __inner::<T>(self_, size, implicit);
    {
        let __view_fn: __ag::ViewFn<T> = {
            let __c_size = size.to_vec();
            let __c_implicit = implicit;
            __ag::Arc::new(move |__b: &__ag::Variable<T>| {
                #[allow(unused_variables)]
                let size = &__c_size[..];
                #[allow(unused_variables)]
                let implicit = __c_implicit;
                __ag::Ok(expand::<T>(__b, size, implicit))
            })
        };
        let __inverse = __ag::ViewInverse::Overlapping;
        __ag::make_view(&__o0, self_, __view_fn, __inverse);
    }
    __o0
}
///Differentiable `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`.
#[allow(clippy::all, unused_mut, non_snake_case)]
pub fn max_dim<T: Backend>(
    self_: &__ag::Variable<T>,
    dim: i64,
    keepdim: bool,
) -> (__ag::Variable<T>, __ag::Variable<T>) {
    let (__r0, __r1) = self_
        .with_data(|__d_self_| <T as Backend>::max_dim(&__d_self_, dim, keepdim));
    let __needs = [self_.requires_grad()];
    if !__ag::should_record_any(&__needs) {
        return {
            let __o0 = __ag::Variable::from_data(__r0);
            let __o1 = __ag::Variable::from_data(__r1);
            if __ag::is_forward_ad_enabled() {
                let _ = __ag::fw_forbid(&[self_], "max", false)
                    .map_err(|__e| {
                        __ag::fw_poison(&__o0, &__e);
                        __ag::fw_poison(&__o1, &__e);
                        __e
                    });
            }
            (__o0, __o1)
        };
    }
    let __edges = [__ag::Some(self_)];
    let __node = MaxBackward0::<T> {
        __needs,
        __marker: __ag::PhantomData,
    };
    let ([__o0], __handle) = __ag::record_saving(
        __node,
        &__edges,
        [__r0],
        |__n, __s| {},
    );
    let __o1 = __ag::Variable::from_data(__r1);
    if __ag::is_forward_ad_enabled() {
        let _ = __ag::fw_forbid(&[self_], "max", false)
            .map_err(|__e| {
                __ag::fw_poison(&__o0, &__e);
                __ag::fw_poison(&__o1, &__e);
                __e
            });
    }
    (__o0, __o1)
}
/// The differentiable operations as methods on `Variable` (generated).
#[allow(clippy::all)]
pub trait VariableOps<T: Backend>: __ag::Borrow<__ag::Variable<T>> {
    ///Differentiable `mul.Tensor(Tensor self, Tensor other) -> Tensor`.
    #[allow(clippy::too_many_arguments)]
    fn mul_tensor(&self, other: &__ag::Variable<T>) -> __ag::Variable<T> {
        mul_tensor::<T>(__ag::Borrow::borrow(self), other)
    }
    ///Differentiable `exp(Tensor self) -> Tensor`.
    #[allow(clippy::too_many_arguments)]
    fn exp(&self) -> __ag::Variable<T> {
        exp::<T>(__ag::Borrow::borrow(self))
    }
    ///Differentiable `sum(Tensor self, *, ScalarType? dtype=None) -> Tensor`.
    #[allow(clippy::too_many_arguments)]
    fn sum(&self, dtype: __ag::Option<__ag::types::ScalarType>) -> __ag::Variable<T> {
        sum::<T>(__ag::Borrow::borrow(self), dtype)
    }
    ///Differentiable `expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)`.
    #[allow(clippy::too_many_arguments)]
    fn expand(&self, size: &[i64], implicit: bool) -> __ag::Variable<T> {
        expand::<T>(__ag::Borrow::borrow(self), size, implicit)
    }
    ///Differentiable `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`.
    #[allow(clippy::too_many_arguments)]
    fn max_dim(
        &self,
        dim: i64,
        keepdim: bool,
    ) -> (__ag::Variable<T>, __ag::Variable<T>) {
        max_dim::<T>(__ag::Borrow::borrow(self), dim, keepdim)
    }
}
impl<T: Backend> VariableOps<T> for __ag::Variable<T> {}
/// The kernels as free functions of raw tensors, named as the differentiable
/// functions (generated): the raw form of the backward formulas calls them.
#[allow(clippy::all, unused_imports, non_snake_case)]
pub mod raw {
    use super::*;
    ///`mul.Tensor(Tensor self, Tensor other) -> Tensor` on raw tensors: the kernel.
    #[inline]
    pub fn mul_tensor<T: Backend>(self_: &T, other: &T) -> T {
        <T as Backend>::mul_tensor(self_, other)
    }
    ///`exp(Tensor self) -> Tensor` on raw tensors: the kernel.
    #[inline]
    pub fn exp<T: Backend>(self_: &T) -> T {
        <T as Backend>::exp(self_)
    }
    ///`sum(Tensor self, *, ScalarType? dtype=None) -> Tensor` on raw tensors: the kernel.
    #[inline]
    pub fn sum<T: Backend>(
        self_: &T,
        dtype: __ag::Option<__ag::types::ScalarType>,
    ) -> T {
        <T as Backend>::sum(self_, dtype)
    }
    ///`expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)` on raw tensors: the kernel.
    #[inline]
    pub fn expand<T: Backend>(self_: &T, size: &[i64], implicit: bool) -> T {
        <T as Backend>::expand(self_, size, implicit)
    }
    ///`max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)` on raw tensors: the kernel.
    #[inline]
    pub fn max_dim<T: Backend>(self_: &T, dim: i64, keepdim: bool) -> (T, T) {
        <T as Backend>::max_dim(self_, dim, keepdim)
    }
}
