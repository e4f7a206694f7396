//! `iopath lfs`: Lustre's `lfs` against a running stack — layouts (`setstripe -c -S -i`,
//! `getstripe [-c -S -i -y -v]` in Lustre's own output formats), `mkdir`, `find`, `df`, `ls
//! [-l]`, `stat`, and `put`/`get`/`rm` to move whole files in and out. Targets are named after
//! the file system, as Lustre's are (`iopath-OST0003`); `docs/lfs.md` says what each field
//! holds here.
//!
//! [`run`] connects a client of its own to the stack at `--mds` (through `--fyod` if given),
//! runs the command into a buffer, closes the client — what was written is committed and the
//! servers forget it — and only then prints; [`run_to`] writes to any sink, so tests read
//! what a user would see.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use iopath_client::layout::{Layout, STRIPE_OFFSET_ANY, StripeRequest};
use iopath_client::{Client, ClientError, FsName, StripeInfo};
use iopath_fabric::Nid;
use iopath_fabric::units::parse_size;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Bytes `put` and `get` move per call: 4 MiB (one PFS packet per object), or the stripe
/// width when that is larger, up to 64 MiB.
const COPY_CHUNK_MIN_BYTES: u64 = 4 << 20;
/// The most `put` and `get` hold in memory at once.
const COPY_CHUNK_MAX_BYTES: u64 = 64 << 20;

/// `iopath lfs`: where the stack is, and the command.
#[derive(clap::Args, Debug)]
pub struct LfsArgs {
    /// The metadata service's NID (printed when the stack starts). Not needed for paths
    /// under an `iopath mount`: the mount names its stack.
    #[arg(long, env = "IOPATH_MDS", conflicts_with = "stack")]
    mds: Option<Nid>,
    /// A stack file whose nodes are TCP addresses (`iopath launch` and `iopath up
    /// --processes` write them): this command joins the stack as a client would, on the
    /// clients' network with their routes, so routed stacks work too.
    #[arg(long, value_name = "FILE")]
    stack: Option<PathBuf>,
    /// Go through the fyod at this NID instead of straight to the storage servers.
    #[arg(long)]
    fyod: Option<Nid>,
    #[command(subcommand)]
    command: LfsCommand,
}

/// One `lfs` command.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum LfsCommand {
    /// Set a directory's default layout, or create an empty file with a layout.
    Setstripe {
        /// Stripe count: 0 for the default, -1 for every target.
        #[arg(
            short = 'c',
            long = "stripe-count",
            default_value_t = 0,
            allow_negative_numbers = true
        )]
        stripe_count: i64,
        /// Stripe size in bytes, with an optional k, m or g suffix (a multiple of 64k); 0 for
        /// the default.
        #[arg(short = 'S', long = "stripe-size", default_value = "0", value_parser = parse_size)]
        stripe_size: u64,
        /// Index of the first target; -1 to let the metadata service choose.
        #[arg(short = 'i', long = "stripe-index", default_value_t = STRIPE_OFFSET_ANY, allow_negative_numbers = true)]
        stripe_index: i64,
        /// The directory or new file.
        path: String,
    },
    /// Print a file's layout (or a directory's default) as Lustre does; a directory given
    /// lists its own default and then each entry's layout, as Lustre's does (`-d`: the
    /// directory alone; `-r`: every entry beneath it).
    Getstripe {
        /// Only the stripe count.
        #[arg(short = 'c', long = "stripe-count")]
        count: bool,
        /// Only the stripe size.
        #[arg(short = 'S', long = "stripe-size")]
        size: bool,
        /// Only the index of the first target.
        #[arg(short = 'i', long = "stripe-index")]
        index: bool,
        /// As YAML, Lustre's `lfs getstripe -y` form.
        #[arg(short = 'y', long = "yaml")]
        yaml: bool,
        /// Everything Lustre's `lfs getstripe -v` prints of a file: `lmm_magic`, the file's
        /// identity (`lmm_seq`, `lmm_object_id`, `lmm_fid`), then the layout and its objects.
        #[arg(short = 'v', long = "verbose", conflicts_with_all = ["count", "size", "index", "yaml"])]
        verbose: bool,
        /// A directory's own default only, not its entries (and no path line), as `ls -d`.
        #[arg(short = 'd', long = "directory")]
        directory: bool,
        /// Every entry beneath a directory, however deep.
        #[arg(short = 'r', long = "recursive", conflicts_with = "directory")]
        recursive: bool,
        /// The files or directories.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<String>,
    },
    /// Make a directory on the metadata target (Lustre's `lfs mkdir`; new files in it take
    /// the file system's default layout until `lfs setstripe` gives it one).
    Mkdir {
        /// The metadata target to make it on: this file system has one, `<fsname>-MDT0000` (0
        /// or -1).
        #[arg(short = 'i', long = "mdt-index", default_value_t = -1, allow_negative_numbers = true)]
        mdt_index: i64,
        /// How many metadata targets to stripe it over: 1 here (0, 1 or -1).
        #[arg(
            short = 'c',
            long = "mdt-count",
            default_value_t = 1,
            allow_negative_numbers = true
        )]
        mdt_count: i64,
        /// The directory.
        path: String,
    },
    /// Find files and directories under a path by name, type, size, stripe count or target,
    /// as Lustre's `lfs find`; prints each match's path. Lustre's (and find's) one-dash
    /// spellings work too: `-type f`, `-name '*.dat'`, `-size +1M`, `-maxdepth 2`.
    Find {
        /// Where to start.
        path: String,
        /// Names matching this shell pattern (`*.dat`).
        #[arg(long, short = 'n')]
        name: Option<String>,
        /// `f` for files, `d` for directories (`b`, `c`, `l`, `p`, `s`, which find takes too,
        /// match nothing: the file system has only files and directories).
        #[arg(long = "type", short = 't', value_parser = ["f", "d", "b", "c", "l", "p", "s"])]
        kind: Option<String>,
        /// Files of this size: `N` exactly, `+N` more, `-N` less, in 512-byte blocks without
        /// a unit, or `c` (bytes), `k`, `M`, `G`, `T` (rounded up to the unit as find does).
        #[arg(long, short = 's', allow_hyphen_values = true)]
        size: Option<String>,
        /// Descend at most this many levels below the starting path (0: the path alone).
        #[arg(long, short = 'D', value_name = "N")]
        maxdepth: Option<u32>,
        /// Keep only entries at least this many levels below the starting path.
        #[arg(long, short = 'd', value_name = "N")]
        mindepth: Option<u32>,
        /// Files striped over exactly this many targets (`+N`, `-N`: more, fewer).
        #[arg(long = "stripe-count", short = 'c', allow_hyphen_values = true)]
        stripe_count: Option<String>,
        /// Files with an object on this target: its index (`3`), name (`iopath-OST0003`) or
        /// UUID (`iopath-OST0003_UUID`).
        #[arg(long = "ost", short = 'O')]
        ost: Option<String>,
    },
    /// List a directory; with `-l`, as `ls -l` does: type and permissions, links, owner,
    /// group, size, modification time and name.
    // `-h` is ls's human-readable sizes here, as users type it; help is `--help`.
    #[command(disable_help_flag = true)]
    Ls {
        /// One line per entry, as `ls -l`. The metadata service keeps no owner or link count:
        /// entries show the invoking user, 1 link a file and 2 a directory, as an `iopath
        /// mount` does; a file's time is its creation (docs/lfs.md says what each column holds).
        #[arg(short = 'l')]
        long: bool,
        /// With `-l`: sizes with a unit (K, M, G: powers of 1024), as `ls -lh`.
        #[arg(short = 'h', long = "human-readable")]
        human: bool,
        /// Print help.
        #[arg(long, action = clap::ArgAction::Help)]
        help: Option<bool>,
        /// The directory (or, with `-l`, a file).
        #[arg(default_value = "/")]
        path: String,
    },
    /// Print a file's or directory's attributes, a file's size glimpsed from its objects.
    Stat {
        /// The file or directory.
        path: String,
    },
    /// Copy a local file into the file system (the new file gets its directory's layout). A
    /// put that fails part way removes the file it made (an empty file laid out beforehand is
    /// truncated back to empty) and says so.
    Put {
        /// The local file.
        local: PathBuf,
        /// The path to create.
        remote: String,
    },
    /// Copy a file out of the file system.
    Get {
        /// The file to read.
        remote: String,
        /// The local file to write (replaced if it exists).
        local: PathBuf,
    },
    /// Each storage target's space and the file system's total, as Lustre's `lfs df` (the
    /// file system under each target, as the target reports it). Unlike Lustre's, no row for
    /// the metadata target: its space is not asked (docs/lfs.md).
    // `-h` is Lustre's (and df's) human-readable sizes here, as users type it; help is
    // `--help`.
    #[command(disable_help_flag = true)]
    Df {
        /// Sizes in powers of 1024 with a unit (K, M, G, T), instead of 1 KiB blocks.
        #[arg(short = 'h', long = "human-readable")]
        human: bool,
        /// Print help.
        #[arg(long, action = clap::ArgAction::Help)]
        help: Option<bool>,
        /// Inodes instead of space.
        #[arg(short = 'i', long = "inodes")]
        inodes: bool,
        /// A path in the file system to report on (under an `iopath mount`, that mount's
        /// stack), as Lustre's `lfs df PATH`.
        path: Option<String>,
    },
    /// Remove a file (and its objects) or an empty directory.
    Rm {
        /// The file or directory.
        path: String,
    },
}

/// Runs `iopath lfs`: a client node of its own on the MDS's network, the command, the client
/// closed, then what the command printed.
pub async fn run(args: LfsArgs) -> anyhow::Result<()> {
    let LfsArgs {
        mds,
        stack,
        fyod,
        mut command,
    } = args;
    if let Some(file) = stack {
        let stack = iopath_stack::Stack::load(&file)?;
        // A guest of the stack: beside its clients, even while a program holds them.
        let (node, client) = iopath_stack::guest::join(&stack, fyod).await?;
        return run_and_close(node, client, command).await;
    }
    let on_mount = command
        .stack_paths_mut()
        .first()
        .and_then(|p| on_a_mount(p));
    let mds = match (mds, on_mount) {
        // A path under a mount: the mount's stack, each path inside it.
        (_, Some((mount_mds, _))) => {
            for path in command.stack_paths_mut() {
                match on_a_mount(path) {
                    Some((other, inside)) if other == mount_mds => *path = inside,
                    _ => bail!("{path} is not under the same iopath mount as the first path"),
                }
            }
            mount_mds
        }
        (Some(mds), None) => mds,
        (None, None) => bail!(
            "which stack? give --mds NID (or set IOPATH_MDS), --stack FILE, or a path under \
             an `iopath mount`"
        ),
    };
    let (node, client) = connect(mds, fyod).await?;
    run_and_close(node, client, command).await
}

/// Runs `command` on `client`, closes it, stops `node`, and prints what the command wrote.
async fn run_and_close(
    node: iopath_fabric::Node,
    client: Client,
    command: LfsCommand,
) -> anyhow::Result<()> {
    let mut out = Vec::new();
    let result = run_to(&client, command, &mut out).await;
    // Before exiting, every write the servers acknowledged is committed and the servers
    // forget this client: its memory is the only copy they could replay, and it is about to
    // go. Done whether or not the command succeeded, for what it wrote before failing; and
    // nothing is reported done ("N bytes copied") before it is.
    let closed = client
        .close()
        .await
        .context("commit what was written and disconnect: it may not survive a server crash");
    node.shutdown();
    if result.is_err() || closed.is_ok() {
        std::io::stdout()
            .write_all(&out)
            .context("write to standard output")?;
    }
    result.and(closed)
}

impl LfsCommand {
    /// The paths in the stack's namespace the command works on.
    fn stack_paths_mut(&mut self) -> Vec<&mut String> {
        match self {
            LfsCommand::Setstripe { path, .. }
            | LfsCommand::Ls { path, .. }
            | LfsCommand::Stat { path }
            | LfsCommand::Rm { path }
            | LfsCommand::Mkdir { path, .. }
            | LfsCommand::Find { path, .. } => vec![path],
            LfsCommand::Getstripe { paths, .. } => paths.iter_mut().collect(),
            LfsCommand::Put { remote, .. } | LfsCommand::Get { remote, .. } => vec![remote],
            LfsCommand::Df { path, .. } => path.iter_mut().collect(),
        }
    }
}

/// The one-dash long options Lustre's `lfs find` takes (it parses with `getopt_long_only`, so
/// `-type f` is `--type f`, as find(1) users type them).
const FIND_ONE_DASH_OPTIONS: [&str; 9] = [
    "-type",
    "-name",
    "-size",
    "-maxdepth",
    "-mindepth",
    "-stripe-count",
    "-ost",
    "-print",
    "-stripe_count",
];

/// The command line with Lustre's one-dash spellings after `lfs ... find` in their two-dash
/// form (`-type` → `--type`), which the parser takes; every other word as it was.
pub fn lustre_spellings(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(lfs) = args.iter().position(|a| a == "lfs") else {
        return args;
    };
    let Some(find) = args[lfs..]
        .iter()
        .position(|a| a == "find")
        .map(|i| i + lfs)
    else {
        return args;
    };
    let mut args = args;
    let mut value_next = false;
    for arg in &mut args[find + 1..] {
        // An option's value is taken as it is, even one spelled like an option.
        if std::mem::take(&mut value_next) {
            continue;
        }
        let Some(word) = arg.to_str() else { continue };
        if FIND_ONE_DASH_OPTIONS.contains(&word) {
            value_next = word != "-print";
            let two_dash = if word == "-stripe_count" {
                "--stripe-count".to_owned()
            } else {
                format!("-{word}")
            };
            *arg = two_dash.into();
        } else if word.starts_with("--") {
            value_next = !word.contains('=') && word != "--print";
        }
    }
    args
}

/// If `path` (as given on the command line) lies under an `iopath mount` of this machine:
/// the mounted stack's metadata service and the path inside the stack, as Lustre's `lfs`
/// takes paths under a Lustre mount. A mount names its stack in its source, as Lustre's
/// `mgsnode:/fsname` does: `NID:/iopath` (`iopath` is the stack's file system name).
fn on_a_mount(path: &str) -> Option<(Nid, String)> {
    let absolute = std::path::absolute(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<(usize, Nid, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(source), Some(point), Some(kind)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // `fuse.iopath` through fusermount; `fuse` when root mounts directly.
        if kind != "fuse.iopath" && kind != "fuse" {
            continue;
        }
        let Some(mds) = source
            .rsplit_once(":/")
            .filter(|(_, fsname)| iopath_client::FsName::new(fsname).is_ok())
            .and_then(|(nid, _)| nid.parse::<Nid>().ok())
        else {
            continue;
        };
        // Mount points are written with spaces and tabs as octal escapes.
        let point = point.replace("\\040", " ").replace("\\011", "\t");
        let Ok(inside) = absolute.strip_prefix(&point) else {
            continue;
        };
        if best.as_ref().is_some_and(|(len, ..)| *len >= point.len()) {
            continue;
        }
        let inside = format!("/{}", inside.display());
        best = Some((point.len(), mds, inside));
    }
    best.map(|(_, mds, inside)| (mds, inside))
}

/// A client of the stack whose metadata service is `mds` (through the fyod `fyod`, if
/// given), on a fabric node of its own: TCP on loopback (or the host's address) on the MDS's
/// network, with a guest's client id of its own (`iopath_stack::guest::client_id`).
pub async fn connect(mds: Nid, fyod: Option<Nid>) -> anyhow::Result<(iopath_fabric::Node, Client)> {
    let interface = match mds.net.net_type {
        iopath_fabric::NetType::Tcp => iopath_fabric::Interface::Tcp {
            nid: Nid::tcp("127.0.0.1:0".parse()?, mds.net.number),
        },
        other => bail!(
            "a command reaches a stack over TCP; {mds} is on a {} network",
            other.name()
        ),
    };
    let node = iopath_fabric::Node::start(iopath_fabric::NodeConfig {
        interfaces: vec![interface],
        ..Default::default()
    })
    .await
    .context("start the client node")?;
    let client = iopath_stack::guest::connect(&node, mds, fyod).await?;
    Ok((node, client))
}

/// Runs `cmd`, writing what it prints to `out`. Long (178 lines) on purpose: one arm per lfs
/// subcommand, each the glue from its flags to the client library and its printing.
pub async fn run_to(client: &Client, cmd: LfsCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        LfsCommand::Setstripe {
            stripe_count,
            stripe_size,
            stripe_index,
            path,
        } => {
            let stripe = StripeRequest {
                stripe_size_bytes: stripe_size,
                stripe_count,
                stripe_offset: stripe_index,
            };
            client
                .setstripe(&path, stripe)
                .await
                .with_context(|| format!("setstripe {path}"))?;
        }
        LfsCommand::Getstripe {
            count,
            size,
            index,
            yaml,
            verbose,
            directory,
            recursive,
            paths,
        } => {
            let only = Only { count, size, index };
            // Lustre's depth: -d, or a field alone, is the path itself (and no path line); by
            // default a directory's entries too; -r everything beneath it.
            let depth = if directory || count || size || index {
                Some(0)
            } else if recursive {
                None
            } else {
                Some(1)
            };
            for path in &paths {
                for (entry, _) in entries_under(client, path, depth).await? {
                    let show_path = depth != Some(0);
                    let text = if verbose {
                        getstripe_verbose(client, &entry, show_path).await?
                    } else {
                        let info = client
                            .stripe_info(&entry)
                            .await
                            .with_context(|| format!("getstripe {entry}"))?;
                        if yaml {
                            getstripe_yaml(&info)?
                        } else if count || size || index {
                            getstripe_only(&info, only)
                        } else {
                            getstripe_text(show_path.then_some(entry.as_str()), &info)
                        }
                    };
                    write!(out, "{text}")?;
                }
            }
        }
        LfsCommand::Ls {
            long: true,
            human,
            path,
            ..
        } => {
            write!(out, "{}", ls::long_listing(client, &path, human).await?)?;
        }
        LfsCommand::Ls {
            long: false, path, ..
        } => {
            for name in client
                .readdir(&path)
                .await
                .with_context(|| format!("ls {path}"))?
            {
                writeln!(out, "{name}")?;
            }
        }
        LfsCommand::Stat { path } => {
            let stat = client
                .stat(&path)
                .await
                .with_context(|| format!("stat {path}"))?;
            writeln!(out, "  File: {path}")?;
            let kind = if stat.is_dir {
                "directory"
            } else {
                "regular file"
            };
            writeln!(out, "  Size: {:<15} Type: {kind}", stat.size_bytes)?;
            writeln!(out, " Inode: {:<15} Mode: {:04o}", stat.ino, stat.mode)?;
            if stat.is_dir {
                writeln!(out, "Entries: {}", stat.entries_count)?;
            }
            if let Some(layout) = &stat.layout {
                writeln!(out, "Layout: {layout}")?;
            }
        }
        LfsCommand::Mkdir {
            mdt_index,
            mdt_count,
            path,
        } => {
            if !matches!(mdt_index, -1 | 0) {
                bail!(
                    "mkdir {path}: -i {mdt_index}: this file system has one metadata target, {} (use 0)",
                    client.fsname().mdt(0)
                );
            }
            if !matches!(mdt_count, -1..=1) {
                bail!(
                    "mkdir {path}: -c {mdt_count}: this file system has one metadata target; a directory cannot be striped over {mdt_count}"
                );
            }
            client
                .mkdir(&path)
                .await
                .with_context(|| format!("mkdir {path}"))?;
        }
        LfsCommand::Find {
            path,
            name,
            kind,
            size,
            maxdepth,
            mindepth,
            stripe_count,
            ost,
        } => {
            let ost = ost
                .map(|text| ost_index(client, &text).with_context(|| format!("find --ost {text}")))
                .transpose()?;
            let mut filter = FindFilter::new(name, kind, size, stripe_count, ost)?;
            filter.depths = (mindepth.unwrap_or(0), maxdepth);
            for found in find(client, &path, &filter).await? {
                writeln!(out, "{found}")?;
            }
        }
        LfsCommand::Df {
            human,
            inodes,
            path,
            ..
        } => {
            if let Some(path) = &path {
                // The path names the file system; it must be in it.
                client
                    .stat(path)
                    .await
                    .with_context(|| format!("df {path}"))?;
            }
            let targets = client.statfs().await.context("df")?;
            write!(out, "{}", df_text(client.fsname(), &targets, human, inodes))?;
        }
        LfsCommand::Put { local, remote } => {
            let copied = put(client, &local, &remote)
                .await
                .with_context(|| format!("put {} to {remote}", local.display()))?;
            writeln!(out, "{copied} bytes copied to {remote}")?;
        }
        LfsCommand::Get { remote, local } => {
            let copied = get(client, &remote, &local)
                .await
                .with_context(|| format!("get {remote} to {}", local.display()))?;
            writeln!(out, "{copied} bytes copied to {}", local.display())?;
        }
        LfsCommand::Rm { path } => {
            // A file is removed by name; a directory refuses unlink and is removed as one.
            match client.unlink(&path).await {
                Err(ClientError::IsADirectory { .. }) => client.rmdir(&path).await,
                other => other,
            }
            .with_context(|| format!("rm {path}"))?;
        }
    }
    Ok(())
}

/// `lfs getstripe`'s text: the path's line (Lustre leaves it out at depth 0: `-d`), then for
/// a file the `lmm_*` header and the object table, for a directory its default on one line.
pub fn getstripe_text(path: Option<&str>, info: &StripeInfo) -> String {
    match info {
        StripeInfo::File(layout) => file_stripe_text_with(path, "", layout),
        StripeInfo::Directory { default_stripe, .. } => format!(
            "{}stripe_count:  {} stripe_size:   {} pattern:       raid0 stripe_offset: {}\n",
            path.map_or_else(String::new, |p| format!("{p}\n")),
            default_stripe.stripe_count,
            default_stripe.stripe_size_bytes,
            default_stripe.stripe_offset
        ),
    }
}

/// `path` and, if it is a directory and `depth` allows, what lies beneath it: each entry with
/// whether it is a directory, the path first, then its entries in name order, depth first.
/// `depth`: levels below `path` to go (`None`: all).
pub async fn entries_under(
    client: &Client,
    path: &str,
    depth: Option<u32>,
) -> anyhow::Result<Vec<(String, bool)>> {
    let stat = client
        .stat(path)
        .await
        .with_context(|| format!("getstripe {path}"))?;
    let mut found = Vec::new();
    // (path, is_dir, level), visited in order; bounded by the namespace's size.
    let mut stack = vec![(path.to_owned(), stat.is_dir, 0u32)];
    while let Some((path, is_dir, level)) = stack.pop() {
        if is_dir && depth.is_none_or(|d| level < d) {
            let entries = client
                .readdir_entries(&path)
                .await
                .with_context(|| format!("list {path}"))?;
            for entry in entries.into_iter().rev() {
                stack.push((
                    child_path(&path, &entry.name),
                    entry.file_type == iopath_client::FileType::Directory,
                    level + 1,
                ));
            }
        }
        found.push((path, is_dir));
    }
    Ok(found)
}

/// `name` in directory `dir`.
fn child_path(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Which of `getstripe -c -S -i` were given.
#[derive(Debug, Clone, Copy)]
pub struct Only {
    /// `-c`.
    pub count: bool,
    /// `-S`.
    pub size: bool,
    /// `-i`.
    pub index: bool,
}

/// The (count, size, offset) a file's layout or a directory's default says.
fn stripe_values(info: &StripeInfo) -> (i64, u64, i64) {
    match info {
        StripeInfo::File(l) => (
            i64::from(l.stripe_count()),
            l.stripe_size_bytes(),
            i64::from(l.stripe_offset()),
        ),
        StripeInfo::Directory { default_stripe, .. } => (
            default_stripe.stripe_count,
            default_stripe.stripe_size_bytes,
            default_stripe.stripe_offset,
        ),
    }
}

/// `getstripe -c`, `-S`, `-i`: one alone prints the bare value, as Lustre's does; several
/// print their labelled lines.
pub fn getstripe_only(info: &StripeInfo, only: Only) -> String {
    let (count, size, offset) = stripe_values(info);
    let wanted = [
        (only.count, "lmm_stripe_count:  ", count.to_string()),
        (only.size, "lmm_stripe_size:   ", size.to_string()),
        (only.index, "lmm_stripe_offset: ", offset.to_string()),
    ];
    let given: Vec<_> = wanted.iter().filter(|(on, ..)| *on).collect();
    if let [(_, _, value)] = given[..] {
        return format!("{value}\n");
    }
    given
        .iter()
        .map(|(_, label, value)| format!("{label}{value}\n"))
        .collect()
}

/// `getstripe -y`: Lustre's YAML form (for a file, its objects as `lmm_objects`), written by
/// a YAML library: Lustre's keys and values, in its order, with the library's spacing (one
/// space after each colon; object ids as numbers, where Lustre writes them in hexadecimal).
pub fn getstripe_yaml(info: &StripeInfo) -> anyhow::Result<String> {
    /// A layout as Lustre's `lfs getstripe -y` names its fields.
    #[derive(serde::Serialize)]
    struct YamlLayout {
        lmm_stripe_count: i64,
        lmm_stripe_size: u64,
        lmm_pattern: &'static str,
        lmm_layout_gen: u32,
        lmm_stripe_offset: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        lmm_objects: Option<Vec<YamlObject>>,
    }
    /// One object of a file's layout.
    #[derive(serde::Serialize)]
    struct YamlObject {
        l_ost_idx: u32,
        l_object_id: u64,
    }
    let (count, size, offset) = stripe_values(info);
    let layout = YamlLayout {
        lmm_stripe_count: count,
        lmm_stripe_size: size,
        lmm_pattern: "raid0",
        lmm_layout_gen: 0,
        lmm_stripe_offset: offset,
        lmm_objects: match info {
            StripeInfo::File(layout) => Some(
                layout
                    .objects()
                    .iter()
                    .map(|o| YamlObject {
                        l_ost_idx: o.target,
                        l_object_id: o.object_id,
                    })
                    .collect(),
            ),
            StripeInfo::Directory { .. } => None,
        },
    };
    serde_norway::to_string(&layout).context("write the layout as YAML")
}

/// `lfs getstripe -v`: a file's layout as [`getstripe_text`] prints it, after the fields
/// Lustre adds — a directory's default as without `-v` (Lustre adds nothing for one either).
pub async fn getstripe_verbose(
    client: &Client,
    path: &str,
    show_path: bool,
) -> anyhow::Result<String> {
    // stat, not getstripe: the layout and the file's inode number in one answer.
    let stat = client
        .stat(path)
        .await
        .with_context(|| format!("getstripe {path}"))?;
    let shown = show_path.then_some(path);
    Ok(match &stat.layout {
        Some(layout) => file_verbose_text(shown, stat.ino, layout),
        None => {
            let info = client
                .stripe_info(path)
                .await
                .with_context(|| format!("getstripe {path}"))?;
            getstripe_text(shown, &info)
        }
    })
}

/// Lustre's `LOV_USER_MAGIC_V1` (`0x0BD10BD0`): a plain RAID-0 layout — no pool, no
/// components — the one kind of layout iopath has.
pub const LOV_USER_MAGIC_V1: u32 = 0x0BD1_0BD0;

/// `lfs getstripe -v`'s text for the file at `path`, inode `ino` at the metadata service.
/// Lustre's fields, with what each holds here:
///
/// - `lmm_magic`: [`LOV_USER_MAGIC_V1`], the kind of layout (plain RAID-0, no pool).
/// - `lmm_seq`, `lmm_object_id`, `lmm_fid`: the file's identity at the metadata service. iopath
///   names a file by its inode number, as Lustre 1.x did, and has no FID sequences: so the
///   sequence is 0 and the object id the inode number, and `lmm_fid` is what Lustre prints
///   for such a layout, the inode number as an IGIF FID (`[0x12:0x0:0x0]`).
/// - `lmm_layout_gen`: 0 — a layout is fixed when its file is created and never changes.
/// - each object's `group`: 0 — objects are named by their id on their target alone, as
///   Lustre's were in group 0.
pub fn file_verbose_text(path: Option<&str>, ino: u64, layout: &Layout) -> String {
    // C's `%#jx` writes 0 as `0`, without the prefix.
    let alt_hex = |value: u64| {
        if value == 0 {
            "0".to_owned()
        } else {
            format!("{value:#x}")
        }
    };
    let (seq, object_id) = (0u64, ino);
    // Lustre prints a layout with sequence 0 as the IGIF FID [object_id:0:object_id >> 32].
    let fid = format!("[{}:0x0:{:#x}]", alt_hex(object_id), object_id >> 32);
    let details = format!(
        "lmm_magic:         0x{LOV_USER_MAGIC_V1:08X}\n\
         lmm_seq:           {}\n\
         lmm_object_id:     {}\n\
         lmm_fid:           {fid}\n",
        alt_hex(seq),
        alt_hex(object_id),
    );
    file_stripe_text_with(path, &details, layout)
}

/// A file's `getstripe` text, with `details` (`-v`'s lines) between the path (if shown) and
/// the layout.
fn file_stripe_text_with(path: Option<&str>, details: &str, layout: &Layout) -> String {
    let path = path.map_or_else(String::new, |p| format!("{p}\n"));
    let mut text = format!(
        "{path}{details}\
         lmm_stripe_count:  {}\n\
         lmm_stripe_size:   {}\n\
         lmm_pattern:       raid0\n\
         lmm_layout_gen:    0\n\
         lmm_stripe_offset: {}\n\
         \tobdidx\t\t objid\t\t objid\t\t group\n",
        layout.stripe_count(),
        layout.stripe_size_bytes(),
        layout.stripe_offset()
    );
    for object in layout.objects() {
        // Lustre's row: "\t%6u\t%14llu\t%#13llx\t%14llu".
        text.push_str(&format!(
            "\t{:>6}\t{:>14}\t{:>#13x}\t{:>14}\n",
            object.target, object.object_id, object.object_id, 0
        ));
    }
    text.push('\n');
    text
}

fn chunk_bytes(layout: &Layout) -> u64 {
    layout
        .stripe_width_bytes()
        .clamp(COPY_CHUNK_MIN_BYTES, COPY_CHUNK_MAX_BYTES)
}

/// `lfs put`: copies `local` into `remote` under a name of its own beside it, then renames
/// it onto `remote` — so a put that fails part way leaves no partial file, and two puts to
/// one name never write into one file (each had destroyed the other's objects under it:
/// "no such object"); the later rename replaces the earlier copy, whole. As `cp` onto a file
/// made by `lfs setstripe`: an existing empty file's layout is the copy's; anything else that
/// exists is refused.
async fn put(client: &Client, local: &std::path::Path, remote: &str) -> anyhow::Result<u64> {
    let source = tokio::fs::File::open(local)
        .await
        .with_context(|| format!("open {}", local.display()))?;
    let length = source.metadata().await?.len();
    let layout = match client.stat(remote).await {
        Ok(stat) if stat.is_dir => anyhow::bail!("{remote} is a directory"),
        Ok(stat) if stat.size_bytes != 0 => {
            anyhow::bail!(
                "{remote} exists and holds {} bytes: remove it first",
                stat.size_bytes
            )
        }
        Ok(stat) => stat
            .layout
            .as_ref()
            .map_or(StripeRequest::INHERIT, |layout| StripeRequest {
                stripe_size_bytes: layout.stripe_size_bytes(),
                stripe_count: i64::from(layout.stripe_count()),
                stripe_offset: i64::from(layout.stripe_offset()),
            }),
        Err(ClientError::NotFound { .. }) => StripeRequest::INHERIT,
        Err(error) => return Err(error).with_context(|| format!("stat {remote}")),
    };
    let partial = partial_name(remote);
    let file = client
        .create(&partial, layout)
        .await
        .with_context(|| format!("create {partial} to copy into"))?;
    let copied = match copy_in(&file, local, length, source).await {
        Ok(copied) => file
            .close()
            .await
            .map(|()| copied)
            .map_err(anyhow::Error::from),
        Err(error) => {
            drop(file);
            Err(error)
        }
    };
    let copied = match copied {
        Ok(copied) => copied,
        // No partial file is left behind to be taken for the copy.
        Err(error) => {
            return Err(match client.unlink(&partial).await {
                Ok(()) => error.context(format!("nothing was put at {remote}")),
                Err(undo) => error.context(format!(
                    "the partial copy {partial} is left holding part of {}: removing it failed: {undo}",
                    local.display()
                )),
            });
        }
    };
    // Written and committed: now it takes the name. Something with data put there meanwhile
    // (another put that finished first) is not replaced — as at the start, it is refused.
    match client.stat(remote).await {
        Ok(stat) if stat.size_bytes != 0 || stat.is_dir => {
            let undo = client.unlink(&partial).await;
            anyhow::bail!(
                "{remote} was written by someone else while this put copied {}: this copy was {}",
                local.display(),
                match undo {
                    Ok(()) => "discarded".to_string(),
                    Err(e) => format!("left at {partial} (removing it failed: {e})"),
                }
            );
        }
        _ => {}
    }
    client
        .rename(&partial, remote)
        .await
        .with_context(|| format!("rename {partial} to {remote}"))?;
    Ok(copied)
}

/// The name a put copies into before it renames the copy onto `remote`: beside it, hidden,
/// and its own (the process id and the time).
fn partial_name(remote: &str) -> String {
    let (dir, name) = match remote.rfind('/') {
        Some(slash) => (&remote[..=slash], &remote[slash + 1..]),
        None => ("", remote),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{dir}.{name}.put-{}-{nanos:08x}", std::process::id())
}

/// Copies the first `length` bytes of `source` (the local file `local`) into `file`.
async fn copy_in(
    file: &iopath_client::File,
    local: &std::path::Path,
    length: u64,
    mut source: tokio::fs::File,
) -> anyhow::Result<u64> {
    let chunk = chunk_bytes(file.layout());
    let mut offset = 0u64;
    // Bounded by the file's length read at the start: a file that grows is copied up to it.
    while offset < length {
        let want = chunk.min(length - offset) as usize;
        let mut buffer = vec![0u8; want];
        source
            .read_exact(&mut buffer)
            .await
            .with_context(|| format!("read {} at {offset}", local.display()))?;
        file.write_at(offset, Bytes::from(buffer)).await?;
        offset += want as u64;
    }
    Ok(offset)
}

async fn get(client: &Client, remote: &str, local: &std::path::Path) -> anyhow::Result<u64> {
    let file = client.open(remote).await?;
    let length = file.size().await?;
    let sink = tokio::fs::File::create(local)
        .await
        .with_context(|| format!("create {}", local.display()))?;
    match copy_out(&file, remote, length, sink).await {
        Ok(copied) => Ok(copied),
        Err(error) => {
            // No partial copy is left behind to be taken for the file.
            let _ = tokio::fs::remove_file(local).await;
            Err(error.context(format!("the partial copy {} was removed", local.display())))
        }
    }
}

/// Copies the `length` bytes of `file` into `sink`, made durable.
async fn copy_out(
    file: &iopath_client::File,
    remote: &str,
    length: u64,
    mut sink: tokio::fs::File,
) -> anyhow::Result<u64> {
    let chunk = chunk_bytes(file.layout());
    let mut offset = 0u64;
    // Bounded by the size glimpsed at the start; a shorter read means the file shrank.
    while offset < length {
        let data = file.read_at(offset, chunk.min(length - offset)).await?;
        if data.is_empty() {
            bail!("{remote} ended at {offset} bytes, before the {length} it had when opened");
        }
        sink.write_all(&data).await?;
        offset += data.len() as u64;
    }
    sink.flush().await?;
    sink.sync_all().await?;
    Ok(offset)
}

mod ls;
#[cfg(test)]
mod tests;

/// `lfs df`'s table: a row per target named by its UUID (`iopath-OST0003_UUID`), Lustre's
/// columns, and the file system's summary.
pub fn df_text(
    fsname: &FsName,
    targets: &[(u32, iopath_client::Capacity)],
    human: bool,
    inodes: bool,
) -> String {
    let size = |bytes: u64| {
        if human {
            human_size(bytes)
        } else {
            (bytes / 1024).to_string()
        }
    };
    let mut text = String::new();
    let (total_h, used_h, avail_h) = if inodes {
        ("Inodes", "IUsed", "IFree")
    } else if human {
        ("bytes", "Used", "Available")
    } else {
        ("1K-blocks", "Used", "Available")
    };
    text.push_str(&format!(
        "{:<20} {:>12} {:>12} {:>12} {:>5} Mounted on\n",
        "UUID",
        total_h,
        used_h,
        avail_h,
        if inodes { "IUse%" } else { "Use%" }
    ));
    let row = |name: &str, total: u64, used: u64, avail: u64, on: &str| {
        // As df: used over what a user could have (used + available), rounded up.
        let pct = if used + avail == 0 {
            0
        } else {
            (used * 100).div_ceil(used + avail)
        };
        let (t, u, a) = if inodes {
            (total.to_string(), used.to_string(), avail.to_string())
        } else {
            (size(total), size(used), size(avail))
        };
        format!("{name:<20} {t:>12} {u:>12} {a:>12} {pct:>4}% {on}\n")
    };
    let (mut total, mut used, mut avail) = (0u64, 0u64, 0u64);
    for (target, t) in targets {
        let (tt, uu, aa) = if inodes {
            (t.files, t.files.saturating_sub(t.files_free), t.files_free)
        } else {
            (
                t.total_bytes,
                t.total_bytes.saturating_sub(t.free_bytes),
                t.available_bytes,
            )
        };
        total += tt;
        used += uu;
        avail += aa;
        text.push_str(&row(
            &fsname.ost(*target).uuid(),
            tt,
            uu,
            aa,
            &format!("/[OST:{target}]"),
        ));
    }
    text.push('\n');
    text.push_str(&row("filesystem_summary:", total, used, avail, "/"));
    text
}

/// `bytes` in powers of 1024 with one decimal and a unit, as `df -h` writes them.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.1}{}", UNITS[unit])
    }
}

/// The index of the storage target `text` names — `3`, `iopath-OST0003` or
/// `iopath-OST0003_UUID` — if the file system has it.
fn ost_index(client: &Client, text: &str) -> anyhow::Result<u32> {
    let index = client.fsname().ost_index(text)?;
    if !client.targets().contains(&index) {
        let fsname = client.fsname();
        let targets = client.targets();
        let range = match (targets.iter().min(), targets.iter().max()) {
            (Some(&first), Some(&last)) => format!(
                "its {} targets are {} to {}",
                targets.len(),
                fsname.ost(first),
                fsname.ost(last)
            ),
            _ => "it has no targets".to_owned(),
        };
        bail!("{fsname} has no {}: {range}", fsname.ost(index));
    }
    Ok(index)
}

/// What `lfs find` keeps.
#[derive(Debug)]
pub struct FindFilter {
    name: Option<iopath_admin::NamePattern>,
    /// The type asked for: `f`, `d`, or one this file system has none of.
    kind: Option<char>,
    size: Option<(std::cmp::Ordering, u64, u64)>,
    stripe_count: Option<(std::cmp::Ordering, u64)>,
    ost: Option<u32>,
    /// Levels below the start an entry must be at least (`-mindepth`) and may be at most
    /// (`-maxdepth`; `None`: any).
    pub depths: (u32, Option<u32>),
}

/// `+N`, `-N` or `N`: more, less, or exactly.
fn compare_arg(text: &str) -> (std::cmp::Ordering, &str) {
    match text.as_bytes().first() {
        Some(b'+') => (std::cmp::Ordering::Greater, &text[1..]),
        Some(b'-') => (std::cmp::Ordering::Less, &text[1..]),
        _ => (std::cmp::Ordering::Equal, text),
    }
}

impl FindFilter {
    /// The filter `lfs find`'s options describe; a bad one is an error naming it.
    pub fn new(
        name: Option<String>,
        kind: Option<String>,
        size: Option<String>,
        stripe_count: Option<String>,
        ost: Option<u32>,
    ) -> anyhow::Result<FindFilter> {
        let name = name
            .map(|n| iopath_admin::NamePattern::parse(&n).with_context(|| format!("--name {n:?}")))
            .transpose()?;
        let size = size
            .map(|s| {
                let (order, number) = compare_arg(&s);
                // find's units: the value counts units, compared after rounding up; without
                // one, 512-byte blocks, as find(1) and Lustre's lfs find count.
                let unit = match number.chars().last() {
                    Some('c') => 1,
                    Some('k' | 'K') => 1 << 10,
                    Some('m' | 'M') => 1 << 20,
                    Some('g' | 'G') => 1 << 30,
                    Some('t' | 'T') => 1u64 << 40,
                    Some('p' | 'P') => 1u64 << 50,
                    _ => 512,
                };
                let digits = number.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                let count: u64 = digits
                    .parse()
                    .with_context(|| format!("--size {s:?}: not [+-]N[ckMGTP]"))?;
                Ok::<_, anyhow::Error>((order, count, unit))
            })
            .transpose()?;
        let stripe_count = stripe_count
            .map(|c| {
                let (order, number) = compare_arg(&c);
                number
                    .parse()
                    .map(|n| (order, n))
                    .with_context(|| format!("--stripe-count {c:?}: not [+-]N"))
            })
            .transpose()?;
        Ok(FindFilter {
            name,
            kind: kind.and_then(|k| k.chars().next()),
            size,
            stripe_count,
            ost,
            depths: (0, None),
        })
    }

    /// Whether it asks about files only (size, layout).
    fn files_only(&self) -> bool {
        self.size.is_some() || self.stripe_count.is_some() || self.ost.is_some()
    }
}

/// `lfs find`: every path under `root` (itself included) the filter keeps, in name order,
/// depth first. Directories are listed once each; a file's size is glimpsed only when the
/// filter asks about size.
pub async fn find(client: &Client, root: &str, filter: &FindFilter) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    let root_stat = client
        .stat(root)
        .await
        .with_context(|| format!("find {root}"))?;
    let (min_depth, max_depth) = filter.depths;
    // (path, is_dir, level), visited in order; bounded by the namespace's size.
    let mut stack = vec![(root.to_owned(), root_stat.is_dir, 0u32)];
    while let Some((path, is_dir, level)) = stack.pop() {
        if level >= min_depth && keeps(client, filter, &path, is_dir).await? {
            found.push(path.clone());
        }
        if is_dir && max_depth.is_none_or(|max| level < max) {
            let entries = client
                .readdir_entries(&path)
                .await
                .with_context(|| format!("find: list {path}"))?;
            for entry in entries.into_iter().rev() {
                stack.push((
                    child_path(&path, &entry.name),
                    entry.file_type == iopath_client::FileType::Directory,
                    level + 1,
                ));
            }
        }
    }
    Ok(found)
}

async fn keeps(
    client: &Client,
    filter: &FindFilter,
    path: &str,
    is_dir: bool,
) -> anyhow::Result<bool> {
    if let Some(kind) = filter.kind
        && kind != if is_dir { 'd' } else { 'f' }
    {
        return Ok(false);
    }
    if let Some(pattern) = &filter.name {
        let name = path.rsplit('/').next().unwrap_or(path);
        if !pattern.matches(name) {
            return Ok(false);
        }
    }
    if !filter.files_only() {
        return Ok(true);
    }
    if is_dir {
        return Ok(false);
    }
    // One call per file: `stat` when the size is asked (it brings the layout too, and its
    // glimpse of the objects is the size), else only the layout.
    let (layout, size) = if filter.size.is_some() {
        let stat = client
            .stat(path)
            .await
            .with_context(|| format!("find: stat {path}"))?;
        (stat.layout, Some(stat.size_bytes))
    } else {
        let layout = client
            .getstripe(path)
            .await
            .with_context(|| format!("find: getstripe {path}"))?;
        (Some(layout), None)
    };
    if filter.stripe_count.is_some() || filter.ost.is_some() {
        let layout = layout.with_context(|| format!("find: {path} has no layout"))?;
        if let Some((order, n)) = filter.stripe_count
            && u64::from(layout.stripe_count()).cmp(&n) != order
        {
            return Ok(false);
        }
        if let Some(ost) = filter.ost
            && !layout.objects().iter().any(|o| o.target == ost)
        {
            return Ok(false);
        }
    }
    if let (Some((order, count, unit)), Some(size)) = (filter.size, size)
        && size.div_ceil(unit).cmp(&count) != order
    {
        return Ok(false);
    }
    Ok(true)
}
