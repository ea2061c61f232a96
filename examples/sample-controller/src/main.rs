//! The `sample-controller` binary (being written).
fn main() {}
