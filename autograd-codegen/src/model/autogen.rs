//! Functions torchgen generates from `autogen:` (placeholder).
