//! The model: what the YAML files say, parsed losslessly and located. Analysis results live
//! in [`crate::analysis`], not here.

pub mod autogen;
pub mod derivatives;
pub mod native;
pub mod schema;
