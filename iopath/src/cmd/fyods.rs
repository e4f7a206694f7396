//! `iopath bench fyods`: the ASCI Red paper's sweep of compute nodes against fyods (Tables 2
//! and 3) on a modeled Janus (the library is `iopath_labs::fyods`).

use iopath_labs::fyods::FyodsLab;
use iopath_stack::schema::FYOD_MEMORY_MAX_BYTES;

use super::lab::{self, LabArgs, set};

/// `iopath bench fyods`'s options.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help(
        "A small sweep (16 and 128 nodes, 1 and 4 fyods, no synchronous row), as the test \
         suite runs it"
    )),
    mut_arg("json", |a| a.help("Print the report as JSON instead of the tables")),
    mut_arg("svg", |a| a.help(
        "Also draw the asynchronous write sweep, a line per fyod count beside the paper's, as \
         an SVG"
    )),
    mut_arg("dir", |a| a.help(
        "Directory for the stacks' bytes (a temporary directory inside, removed; default a \
         memory file system where there is one, as the disks are modeled)"
    )),
)]
pub struct FyodsArgs {
    /// Compute-node counts to sweep (the tables' columns; each 1 to 512).
    #[arg(long, value_delimiter = ',')]
    nodes: Option<Vec<u32>>,
    /// Fyod counts to sweep (the tables' rows; each 1 to 64).
    #[arg(long, value_delimiter = ',')]
    fyods: Option<Vec<u32>>,
    /// The synchronous API's row at this many compute nodes (default 64, as the paper's Figure
    /// 10); 0 leaves it out.
    #[arg(long)]
    sync_nodes: Option<u32>,
    /// Modeled seconds each phase writes (then reads) for.
    #[arg(long)]
    seconds: Option<f64>,
    /// Host seconds per modeled second (default 2, --quick 4): raise it if this host cannot
    /// keep pace with the modeled rates (the same points should then read alike).
    #[arg(long)]
    time_scale: Option<u32>,
    /// Threads a fyod's service node holds before it pages (its memory over a thread's): the
    /// modeled mechanism of the fall. Large enough, and one fyod no longer falls.
    #[arg(long)]
    threads_fit: Option<u64>,
    /// What every lab takes.
    #[command(flatten)]
    lab: LabArgs,
}

/// Runs `iopath bench fyods`.
pub async fn run(args: FyodsArgs) -> anyhow::Result<()> {
    lab::run::<FyodsLab>(args.lab, |config| {
        set(&mut config.nodes, args.nodes);
        set(&mut config.fyods, args.fyods);
        set(
            &mut config.sync_nodes,
            args.sync_nodes.map(|n| (n > 0).then_some(n)),
        );
        set(&mut config.time_scale, args.time_scale);
        set(&mut config.seconds, args.seconds);
        if let Some(fit) = args.threads_fit {
            // The node's memory is the threads' (a stack file's bound applies to it).
            let most = FYOD_MEMORY_MAX_BYTES / config.janus.thread_bytes;
            anyhow::ensure!(
                (1..=most).contains(&fit),
                "--threads-fit: 1 to {most} threads of {} MiB",
                config.janus.thread_bytes >> 20
            );
            config.janus.memory_bytes = config.janus.thread_bytes * fit;
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use iopath_labs::fyods::FyodsConfig;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: FyodsArgs,
    }

    /// An argument's help text, as `--help` prints it, on one line.
    fn help_of(id: &str) -> String {
        let command = <Cli as clap::CommandFactory>::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("no argument {id}"));
        arg.get_long_help()
            .or(arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default()
            .replace('\n', " ")
    }

    /// The defaults the help texts name are the sweep's own.
    #[test]
    fn the_defaults_the_help_names_are_the_ones_taken() {
        let (full, quick) = (FyodsConfig::default(), FyodsConfig::quick());
        let sync = help_of("sync_nodes");
        let nodes = full.sync_nodes.unwrap_or(0);
        assert!(
            sync.contains(&format!("(default {nodes},")),
            "{sync} against {nodes}"
        );
        let scale = help_of("time_scale");
        let named = format!(
            "(default {}, --quick {})",
            full.time_scale, quick.time_scale
        );
        assert!(scale.contains(&named), "{scale} against {named}");
    }
}
