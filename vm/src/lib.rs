//! The fuseraft VM: executes an `ir::Program` through a closed set of effects (skeleton; see issue 4).
