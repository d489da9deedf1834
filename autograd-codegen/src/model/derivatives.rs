//! derivatives.yaml (placeholder).
