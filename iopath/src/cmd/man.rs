//! `iopath man`: a man page per command. clap_mangen renders the title, name, description,
//! options and subcommands; this file adds what a man page is read for and clap_mangen leaves
//! out — a SYNOPSIS that names each option's value (`-b SIZE`), ENVIRONMENT (the variables the
//! command reads), EXAMPLES and SEE ALSO.

use std::io::Write;

use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

/// The variables every command reads, beside those its options name.
const LOG_VARIABLES: [(&str, &str); 2] = [
    (
        "IOPATH_LOG",
        "What is logged to standard error: error, warn (the default), info, debug or trace, or a \
         tracing filter such as iopath_storage_server=debug,info; a value that is neither is an \
         error.",
    ),
    (
        "RUST_LOG",
        "The same, when IOPATH_LOG is unset, as Rust programs' users expect.",
    ),
];

/// Examples for a command, by its words after `iopath` (`bench ior`): each a command line
/// and what it does.
fn examples(words: &str) -> &'static [(&'static str, &'static str)] {
    match words {
        "" => &[
            (
                "iopath demo",
                "Start the default preset in this process, write and read back through the I/O \
                 path, and show what happened.",
            ),
            (
                "iopath up --preset spider-mini --processes",
                "Run a stack as a process per node until Ctrl-C.",
            ),
            (
                "iopath bench ior --preset spider-mini -w -r -F -t 1m -b 64m",
                "IOR on a stack, beside the raw disk measured in the same run.",
            ),
        ],
        "demo" => &[
            (
                "iopath demo",
                "The default preset, asci-red-mini, in this process.",
            ),
            (
                "iopath demo --preset spider-mini --processes --crash oss0",
                "A process per server node; oss0 is killed before its journal commits and \
                 started again, and the writer replays.",
            ),
        ],
        "up" => &[
            (
                "iopath up --preset spider-mini-routed --processes --metrics",
                "A routed stack of processes, each serving /metrics; the node table says where.",
            ),
            (
                "iopath up --stack my.toml --dir state --mount /mnt/iopath",
                "A stack file's stack, its state kept in ./state, mounted with FUSE.",
            ),
        ],
        "bench ior" => &[
            (
                "iopath bench ior --preset spider-mini -w -r -F -t 1m -b 64m -e -C",
                "A file per task, fsync before close, read back by the task one node over.",
            ),
            (
                "iopath bench ior -w -t 1m -b 1g -D 5 -O stoneWallingWearOut=1",
                "Stonewalled after 5 s, every task then brought to the most transfers any made.",
            ),
            (
                "iopath bench ior -f tests.ior -O summaryFormat=JSON > out.json",
                "IOR's script of tests, the results as IOR's JSON.",
            ),
        ],
        "lfs" => &[
            (
                "iopath lfs --mds NID setstripe -c -1 -S 4m /scratch",
                "New files in /scratch striped over every target in 4 MiB stripes.",
            ),
            (
                "iopath lfs --stack stack.toml find / -type f -size +1G",
                "Files over 1 GiB, with find's spellings, as Lustre's lfs takes them.",
            ),
            (
                "iopath lfs --mds NID df -h",
                "Each target's space and the file system's.",
            ),
        ],
        "lctl" => &[
            (
                "iopath lctl --stack stack.toml --node oss0 get_param obdfilter.*.stats",
                "A storage server's targets' statistics, by the node's name in the stack file.",
            ),
            (
                "iopath lctl --admin ADDR list_param -R '*'",
                "Every parameter of the node at ADDR.",
            ),
        ],
        "lnetctl" => &[(
            "iopath lnetctl --admin ADDR route show -v",
            "The node's routes in lnetctl's YAML.",
        )],
        "trace" => &[(
            "iopath trace --preset spider-mini-routed",
            "One write and one read followed hop by hop through a router.",
        )],
        "mount" => &[(
            "iopath mount --mds NID /mnt/iopath",
            "Mount a running stack; Ctrl-C or fusermount3 -u unmounts.",
        )],
        "soak" => &[(
            "iopath soak --minutes 5 --interval 20",
            "Five minutes of verified writes while a server node is killed every 20 s.",
        )],
        _ => &[],
    }
}

/// Other pages worth reading beside a command's, by its words: the real tools it follows.
fn related(words: &str) -> &'static [&'static str] {
    match words.split(' ').next().unwrap_or_default() {
        "lfs" => &["lfs(1)", "lfs-find(1)", "lfs-getstripe(1)", "lfs-df(1)"],
        "lctl" => &["lctl(8)"],
        "lnetctl" => &["lnetctl(8)"],
        "bench" => &["ior(1)", "fio(1)"],
        "mount" => &["fusermount3(1)"],
        "completions" => &["bash(1)"],
        _ => &[],
    }
}

/// Writes a page per command of `root` (and its subcommands') into `dir`, as clap_mangen's
/// `generate_to` names them (`iopath-bench-ior.1`).
pub fn write_pages(root: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    let mut pending = vec![(root, None::<String>)];
    // Bounded by the command tree.
    while let Some((command, parent)) = pending.pop() {
        let name = page_name(&command);
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            pending.push((sub.clone(), Some(name.clone())));
        }
        let mut file = std::fs::File::create(dir.join(format!("{name}.1")))?;
        file.write_all(&page(&command, parent.as_deref())?)?;
    }
    Ok(())
}

/// The top command's page, to print.
pub fn top_page(root: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut root = root.disable_help_subcommand(true);
    root.build();
    page(&root, None)
}

/// A command's page name: `iopath-bench-ior`.
fn page_name(command: &clap::Command) -> String {
    command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
        .to_owned()
}

/// One command's page; `parent` names its parent's page.
fn page(command: &clap::Command, parent: Option<&str>) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    synopsis(command).to_writer(&mut out)?;
    man.render_description_section(&mut out)?;
    if command.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if command.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    if command.get_after_help().is_some() || command.get_after_long_help().is_some() {
        man.render_extra_section(&mut out)?;
    }
    let words = words(command);
    let mut tail = Roff::default();
    environment(command, &mut tail);
    examples_section(&words, &mut tail);
    see_also(command, parent, &words, &mut tail);
    tail.to_writer(&mut out)?;
    Ok(out)
}

/// The command's words after `iopath`: `bench ior`, or "" for iopath itself.
fn words(command: &clap::Command) -> String {
    let bin = command.get_bin_name().unwrap_or_else(|| command.get_name());
    bin.split_once(' ')
        .map_or_else(String::new, |(_, rest)| rest.to_owned())
}

/// SYNOPSIS: the command, each option with the name of its value (`[-b SIZE]`), the
/// positional arguments, and `COMMAND` where there are subcommands.
fn synopsis(command: &clap::Command) -> Roff {
    let name = command.get_bin_name().unwrap_or_else(|| command.get_name());
    let mut line: Vec<Inline> = vec![bold(name)];
    for arg in command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
    {
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(short), _) => format!("-{short}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => continue,
        };
        let (open, close) = if arg.is_required_set() {
            ("", "")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {open}")));
        line.push(bold(flag));
        if arg.get_num_args().is_some_and(|n| n.takes_values()) {
            let value = arg
                .get_value_names()
                .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.join(" "));
            line.push(roman(" "));
            line.push(italic(value));
        }
        line.push(roman(close));
        if matches!(arg.get_action(), clap::ArgAction::Count) {
            line.push(roman("..."));
        }
    }
    for arg in command.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), |v| v.join(" "));
        let (open, close) = if arg.is_required_set() {
            ("", "")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {open}")));
        line.push(italic(value));
        line.push(roman(close));
    }
    if command.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push(roman(" "));
        line.push(italic("COMMAND"));
    }
    let mut roff = Roff::default();
    roff.control("SH", ["SYNOPSIS"]);
    roff.text(line);
    roff
}

/// ENVIRONMENT: the variables the command's options read, and the log's.
fn environment(command: &clap::Command, roff: &mut Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    for arg in command.get_arguments() {
        let Some(variable) = arg.get_env() else {
            continue;
        };
        let flag = arg.get_long().map(|l| format!("--{l}")).unwrap_or_default();
        roff.control("TP", []);
        roff.text([bold(variable.to_string_lossy().into_owned())]);
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        roff.text([roman(format!("{help} (as {flag})"))]);
    }
    for (variable, what) in LOG_VARIABLES {
        roff.control("TP", []);
        roff.text([bold(variable)]);
        roff.text([roman(what)]);
    }
}

/// EXAMPLES, where the command has some.
fn examples_section(words: &str, roff: &mut Roff) {
    let examples = examples(words);
    if examples.is_empty() {
        return;
    }
    roff.control("SH", ["EXAMPLES"]);
    for (line, what) in examples {
        roff.control("TP", []);
        roff.text([bold(*line)]);
        roff.text([roman(*what)]);
    }
}

/// SEE ALSO: the parent's page, the subcommands' pages, and the real tools the command
/// follows.
fn see_also(command: &clap::Command, parent: Option<&str>, words: &str, roff: &mut Roff) {
    let mut pages: Vec<String> = parent.map(|p| format!("{p}(1)")).into_iter().collect();
    pages.extend(
        command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("{}(1)", page_name(s))),
    );
    pages.extend(related(words).iter().map(|p| (*p).to_owned()));
    if pages.is_empty() {
        return;
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(pages.join(", "))]);
}
