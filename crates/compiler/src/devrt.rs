//! Calls into CUDA's device runtime (dynamic parallelism) become one
//! runtime call, [`runtime::DEVICE_RUNTIME`], whose arguments travel as
//! u64 words in a stack array (see [`crate::cpu_abi::devrt`]).

use ptx::ast::Operand;

use crate::cpu_abi::devrt::{Arg, Function, Ret};
use crate::cpu_abi::runtime;
use crate::ir::Ty;
use crate::lower::{FnLower, Res, VarLoc};

/// Device-side `cudaDeviceSynchronize` (CDP1), removed in CUDA 12.
pub const DEVICE_SYNCHRONIZE: &[&str] = &["cudaDeviceSynchronize", "__cudaDeviceSynchronizeDeprecationAvoidance"];

impl FnLower<'_, '_> {
    /// Lowers a call of device-runtime function `f`.
    pub(crate) fn device_runtime_call(&mut self, f: &Function, rets: &[Operand], params: &[Operand]) -> Res<()> {
        if params.len() != f.args.len() {
            return self.invalid(format!("device runtime function `{}` takes {} arguments, {} given", f.name, f.args.len(), params.len()));
        }
        let words: usize = f.args.iter().map(|a| a.words()).sum();
        let array = self.out.alloca(&format!("[{} x i64]", words.max(1)), 8);
        let mut w = 0;
        for (k, arg) in f.args.iter().enumerate() {
            let values = match arg {
                Arg::U32 => {
                    let v = self.param_arg(params, k, Ty::I32)?;
                    vec![self.convert(v, Ty::I64, false)]
                }
                Arg::U64 => vec![self.param_arg(params, k, Ty::I64)?],
                Arg::Dim3 => self.struct_arg(&params[k], "a dim3", Ty::I32, 3)?,
                Arg::Fields64(n) => self.struct_arg(&params[k], "a structure passed by value", Ty::I64, *n)?,
            };
            for v in values {
                let slot = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i64, ptr {array}, i64 {w}"));
                self.out.op(format_args!("store {v}, {slot}, align 8"));
                w += 1;
            }
        }
        self.cx.declare_runtime(&runtime::DEVICE_RUNTIME);
        let op = f.op as u32;
        let r =
            self.out.def(Ty::I64, format_args!("call i64 @{}(ptr %ctx, i32 %lin, i32 {op}, ptr {array})", runtime::DEVICE_RUNTIME.name));
        let r = match f.ret {
            Ret::Error => self.convert(r, Ty::I32, false),
            Ret::Ptr => r,
        };
        self.param_result(rets, r)
    }

    /// A structure passed by value (a `.param` array): its `n` fields of
    /// type `field` (`.b32` for a `dim3`'s three, `.b64` for a
    /// `cudaPitchedPtr`'s four), each as a zero-extended word.
    fn struct_arg(&mut self, op: &Operand, what: &str, field: Ty, n: u8) -> Res<Vec<crate::ir::V>> {
        let Some(VarLoc::Ptr(p)) = (match *op {
            Operand::Var(v) => self.vars.get(&v).cloned(),
            _ => None,
        }) else {
            return self.invalid(format!("{what} argument must be a `.param` array"));
        };
        let size = if field == Ty::I32 { 4 } else { 8 };
        let mut out = Vec::new();
        for i in 0..u64::from(n) {
            let at = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr {p}, i64 {}", size * i));
            let x = self.out.def(field, format_args!("load {}, {at}, align {size}", field.name()));
            out.push(self.convert(x, Ty::I64, false));
        }
        Ok(out)
    }
}
