//! The runtime: variables, nodes, saved variables, engine.
