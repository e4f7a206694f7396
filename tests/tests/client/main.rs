//! The client library's integration tests, on the one in-process stack (`TestStack`): round
//! trips over layouts, asynchronous and streamed I/O, concurrent writers, the namespace, a
//! storage server restarted under writers, bad input, and I/O through fyods. They live here,
//! above `stack`, rather than in `client/tests`: `stack` depends on the client, so a test of
//! the client on a stack is a test of several crates together, and no dev-dependency of a
//! lower crate points up.

mod aio;
mod bad_input;
mod common;
mod concurrent;
mod forwarder;
mod namespace;
mod restart;
mod round_trip;
mod stream;
