//! What every paper experiment's command shares (`bench fyods`, `bench placement`, `bench
//! routing`): the flags `--quick`, `--json`, `--svg` and `--dir`, and one way to run a
//! [`Lab`] with them. A command adds its own options and says what its `--quick` run and its
//! plot are (`mut_arg` on the flattened flags).

use std::path::PathBuf;

use iopath_labs::Lab;

/// The flags every lab takes.
#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// A small run, as the test suite runs it.
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw the lab's plot as an SVG at this path.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Directory for the stacks' storage (a temporary directory inside it, removed).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Runs lab `L`: its quick or full configuration, changed by the command's own `options`,
/// run with progress on standard error; then its plot if asked for, and its report.
pub async fn run<L: Lab>(
    args: LabArgs,
    options: impl FnOnce(&mut L::Config) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut config = if args.quick {
        L::quick()
    } else {
        L::Config::default()
    };
    options(&mut config)?;
    *L::storage_dir(&mut config) = args.dir;
    let report = L::run(&config, &mut std::io::stderr()).await?;
    let svg = args
        .svg
        .as_deref()
        .map(|path| (path, L::figure(&report).map(|f| f.svg()), L::DRAWS));
    super::output::print_report(&report, args.json, L::render, svg)
}

/// Sets `field` to the option's value when the option was given.
pub fn set<T>(field: &mut T, option: Option<T>) {
    if let Some(value) = option {
        *field = value;
    }
}
