//! The fyod's integration tests, on the one in-process stack (`TestStack`): round trips in
//! PFS and UFS mode, many compute nodes, call scheduling, MUNIX tokens, replay through a fyod
//! and bad input. They live here, above `stack`, rather than in `forwarder/tests`: `stack`
//! depends on the forwarder, so a test of the fyod on a stack is a test of several crates
//! together, and no dev-dependency of a lower crate points up.

mod bad_input;
mod common;
mod many_clients;
mod munix;
mod replay;
mod round_trip;
mod scheduling;
