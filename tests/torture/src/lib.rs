//! History checker (to come).
