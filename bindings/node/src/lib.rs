//! Node bindings of fencing.
