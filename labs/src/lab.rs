//! One skeleton for the papers' experiments (`bench fyods`, `bench placement`, `bench
//! routing`): a configuration whose `Default` is the paper's shape at this machine's scale and
//! a quick form the test suite runs; a run on stacks the lab builds, saying what it does as it
//! goes; a report (JSON for machines), a table for people and a plot. The binary runs every
//! lab through the same few lines (`iopath/src/cmd/lab.rs`), so a new experiment writes what
//! is its own and nothing else.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;

use iopath_bench::BenchError;

/// A paper's experiment.
pub trait Lab {
    /// What a run is given: `Default` is the paper's shape at this machine's scale.
    type Config: Default;
    /// What a run measured, with what was modeled said in words.
    type Report: serde::Serialize;

    /// What the lab's plot shows, for the line that says where it was drawn ("completion
    /// times").
    const DRAWS: &'static str;

    /// A small run, as the test suite runs it.
    fn quick() -> Self::Config;

    /// Where the stacks' storage goes (a temporary directory inside it, removed); `None`, the
    /// lab's default.
    fn storage_dir(config: &mut Self::Config) -> &mut Option<PathBuf>;

    /// Runs the experiment, saying on `progress` what it does; the configuration is checked
    /// first, and a bad value is refused naming its option.
    fn run(
        config: &Self::Config,
        progress: &mut impl Write,
    ) -> impl Future<Output = Result<Self::Report, BenchError>>;

    /// The report for people: the tables, the paper's figures beside the run's, what was
    /// modeled.
    fn render(report: &Self::Report) -> String;

    /// The lab's plot, when the report has something to draw.
    fn figure(report: &Self::Report) -> Option<iopath_plot::Figure>;
}
