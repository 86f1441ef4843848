//! Python bindings of fencing.
