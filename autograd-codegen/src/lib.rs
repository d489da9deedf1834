//! Analysis and emission.
