//! The C ABI of fencing (see the README's "C API conventions").
