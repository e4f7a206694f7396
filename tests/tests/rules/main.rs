//! The rules the workspace keeps, read from its sources and manifests: crates in their floors
//! (`layers`), no circle of imports among a crate's files (`circles`), no stack file built as
//! text (`stack_values`), one way to take a lock (`locks`). Each fails naming the places that
//! break it, and each holds a planted case to show it can fail.

mod circles;
mod layers;
mod locks;
mod stack_values;
mod workspace;
