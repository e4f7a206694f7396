//! `iopath lctl`: get, set and list a node's parameters, and list its devices (`dl`), printed
//! the way Lustre's `lctl` does.
//!
//! ```text
//! $ iopath lctl --admin 127.0.0.1:7000 get_param fabric.*.credits
//! fabric.mem0.credits=64
//! fabric.tcp0.credits=8
//! $ iopath lctl --admin 127.0.0.1:7000 get_param fabric.peers
//! fabric.peers=
//! nid credits
//! 17@mem0 8
//! $ iopath lctl --admin 127.0.0.1:7000 --secret-file /tmp/iopath-up-x/admin.secret \
//!       set_param fabric.tcp0.credits=16
//! fabric.tcp0.credits=16
//! $ iopath lctl --admin 127.0.0.1:7001 dl
//!   0 UP obdfilter iopath-OST0000 iopath-OST0000_UUID
//!   1 UP obdfilter iopath-OST0002 iopath-OST0002_UUID
//! ```

use std::net::SocketAddr;

use anyhow::{Context, anyhow, bail};

use crate::client::Client;
use crate::error::AdminError;
use crate::param::Param;
use crate::secret::Secret;
use crate::tree::{ParamInfo, ParamTree, ParamValue};

/// The `lctl` subcommands.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum LctlCommand {
    /// Print parameters whose names match the patterns (`fabric.*.credits`).
    #[command(name = "get_param")]
    GetParam {
        /// Print only the values, not `name=`.
        #[arg(short = 'n')]
        values_only: bool,
        /// Print only the names of what matches, as `list_param` does: directories too
        /// (`obdfilter.*` names each target), as Lustre's does.
        #[arg(short = 'N', conflicts_with = "values_only")]
        names_only: bool,
        /// lctl-style globs: `*`, `?` and `[abc]`, none of which reach across a dot.
        #[arg(required = true, value_name = "PATTERN")]
        patterns: Vec<String>,
    },
    /// Set parameters: every writable parameter matching each `pattern=value`.
    #[command(name = "set_param")]
    SetParam {
        /// Do not print what was set.
        #[arg(short = 'n')]
        quiet: bool,
        /// `pattern=value` pairs, e.g. `fabric.tcp0.credits=16`.
        #[arg(required = true, value_name = "PATTERN=VALUE")]
        assignments: Vec<String>,
    },
    /// List the node's devices — a storage server's targets, the metadata service's target —
    /// as Lustre's `lctl dl` does (the node's `devices` parameter), without Lustre's last
    /// column, the reference count: iopath's devices keep none.
    #[command(name = "dl", alias = "device_list")]
    DeviceList,
    /// List the names matching the patterns, as Lustre's does: parameters and directories
    /// (`list_param obdfilter.*` lists each target's directory); `-R` everything below.
    #[command(name = "list_param")]
    ListParam {
        /// Mark directories with a trailing `/` and writable parameters with `=`, as `lctl
        /// list_param -F` does.
        #[arg(short = 'F')]
        classify: bool,
        /// Every parameter below each match, however deep.
        #[arg(short = 'R')]
        recursive: bool,
        /// Directories only.
        #[arg(short = 'D')]
        directories: bool,
        /// lctl-style globs: `*`, `?` and `[abc]`, none of which reach across a dot.
        #[arg(required = true, value_name = "PATTERN")]
        patterns: Vec<String>,
    },
    /// LNet's drop rule: lose one in every RATE messages this node sends from SRC to DST.
    #[command(name = "net_drop_add")]
    NetDropAdd {
        /// The messages' rule, by source and destination.
        #[command(flatten)]
        rule: NetRuleArgs,
    },
    /// Remove the drop rule from SRC to DST, or every drop rule with -a.
    #[command(name = "net_drop_del")]
    NetDropDel {
        /// Which rule.
        #[command(flatten)]
        which: NetRuleWhich,
    },
    /// The node's drop rules, with the messages each saw and dropped.
    #[command(name = "net_drop_list")]
    NetDropList,
    /// LNet's delay rule: hold one in every RATE messages from SRC to DST for LATENCY.
    #[command(name = "net_delay_add")]
    NetDelayAdd {
        /// The messages' rule, by source and destination.
        #[command(flatten)]
        rule: NetRuleArgs,
        /// How long each chosen message is held: `500ms`, `2s`.
        #[arg(short = 'l', long)]
        latency: String,
    },
    /// Remove the delay rule from SRC to DST, or every delay rule with -a.
    #[command(name = "net_delay_del")]
    NetDelayDel {
        /// Which rule.
        #[command(flatten)]
        which: NetRuleWhich,
    },
    /// The node's delay rules, with the messages each saw and delayed.
    #[command(name = "net_delay_list")]
    NetDelayList,
}

/// A network rule's messages: `-s SRC -d DST -r RATE`, as LNet's `lctl net_drop_add` takes.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct NetRuleArgs {
    /// Source: a NID, `*@NET` or `*`.
    #[arg(short = 's', long)]
    source: String,
    /// Destination: a NID, `*@NET` or `*`.
    #[arg(short = 'd', long)]
    dest: String,
    /// One message in every RATE (1 for all).
    #[arg(short = 'r', long)]
    rate: u64,
}

/// Which network rule to remove.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct NetRuleWhich {
    /// Source of the rule.
    #[arg(short = 's', long, requires = "dest", required_unless_present = "all")]
    source: Option<String>,
    /// Destination of the rule.
    #[arg(short = 'd', long, requires = "source")]
    dest: Option<String>,
    /// Every rule of the kind.
    #[arg(short = 'a', long, conflicts_with_all = ["source", "dest"])]
    all: bool,
}

impl NetRuleWhich {
    fn command(&self) -> String {
        match (&self.source, &self.dest) {
            (Some(source), Some(dest)) if !self.all => format!("del {source} {dest}"),
            _ => "clear".to_owned(),
        }
    }
}

/// What a network-rule subcommand does to its parameter (`net_drop` or `net_delay`).
enum NetRuleOp {
    /// Writes this command.
    Set(&'static str, String),
    /// Lists the rules.
    List(&'static str),
}

impl LctlCommand {
    fn net_rule_op(&self) -> Option<NetRuleOp> {
        let add =
            |rule: &NetRuleArgs| format!("add {} {} rate={}", rule.source, rule.dest, rule.rate);
        Some(match self {
            LctlCommand::NetDropAdd { rule } => NetRuleOp::Set(NET_DROP_PARAM, add(rule)),
            LctlCommand::NetDropDel { which } => NetRuleOp::Set(NET_DROP_PARAM, which.command()),
            LctlCommand::NetDropList => NetRuleOp::List(NET_DROP_PARAM),
            LctlCommand::NetDelayAdd { rule, latency } => {
                NetRuleOp::Set(NET_DELAY_PARAM, format!("{} latency={latency}", add(rule)))
            }
            LctlCommand::NetDelayDel { which } => NetRuleOp::Set(NET_DELAY_PARAM, which.command()),
            LctlCommand::NetDelayList => NetRuleOp::List(NET_DELAY_PARAM),
            _ => return None,
        })
    }
}

/// The parameter a node's drop rules are written to and read from.
pub const NET_DROP_PARAM: &str = "net_drop";
/// The parameter a node's delay rules are written to and read from.
pub const NET_DELAY_PARAM: &str = "net_delay";

/// Runs `cmd` against the admin service at `admin_addr` and prints the result on stdout;
/// `set_param` sends `secret`, which the node requires.
///
/// Like lctl, a pattern that fails does not stop the others: what succeeded is printed, and
/// the error then names every pattern that failed.
pub async fn run(
    admin_addr: SocketAddr,
    secret: Option<Secret>,
    cmd: LctlCommand,
) -> anyhow::Result<()> {
    let mut out = String::new();
    let result = execute(admin_addr, secret, &cmd, &mut out).await;
    // What succeeded is printed even when a pattern failed; a write that fails is the error
    // then (`> /dev/full`; a closed pipe, which the binary ends quietly).
    let written = std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())
        .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    result?;
    written.map_err(anyhow::Error::from)
}

/// Runs `cmd` and appends what [`run`] would print to `out`.
pub async fn execute(
    admin_addr: SocketAddr,
    secret: Option<Secret>,
    cmd: &LctlCommand,
    out: &mut String,
) -> anyhow::Result<()> {
    let mut client = Client::connect(admin_addr).await?;
    if let Some(secret) = secret {
        client = client.with_secret(secret);
    }
    let mut failures = Vec::new();
    match cmd {
        LctlCommand::GetParam {
            values_only,
            names_only,
            patterns,
        } => {
            for pattern in patterns {
                if *names_only {
                    match client.list_param(pattern).await {
                        Ok(listed) => print_names(out, &entries_at(pattern, &listed), false),
                        Err(err) => failures.push(format!("get_param {pattern}: {err}")),
                    }
                    continue;
                }
                match client.get_param(pattern).await {
                    Ok(values) => print_values(out, &values, *values_only, false),
                    Err(err) => failures.push(format!("get_param {pattern}: {err}")),
                }
            }
        }
        LctlCommand::SetParam { quiet, assignments } => {
            for assignment in assignments {
                let (pattern, value) = match parse_assignment(assignment) {
                    Ok(split) => split,
                    Err(err) => {
                        failures.push(format!("set_param: {err}"));
                        continue;
                    }
                };
                match client.set_param(pattern, value).await {
                    Ok(names) if !quiet => print_set(out, &names, value),
                    Ok(_) => {}
                    Err(err) => failures.push(format!("set_param {pattern}: {err}")),
                }
            }
        }
        LctlCommand::DeviceList => match client.get_param(DEVICES_PARAM).await {
            Ok(values) => print_values(out, &values, true, false),
            // A node without devices (a client, a router) has no such parameter: none listed.
            Err(crate::AdminError::Remote {
                code: tonic::Code::NotFound,
                ..
            }) => {}
            Err(err) => failures.push(format!("dl: {err}")),
        },
        LctlCommand::ListParam {
            classify,
            recursive,
            directories,
            patterns,
        } => {
            for pattern in patterns {
                match client.list_param(pattern).await {
                    Ok(listed) => {
                        let mut entries = if *recursive {
                            listed.into_iter().map(Entry::Param).collect()
                        } else {
                            entries_at(pattern, &listed)
                        };
                        if *directories {
                            entries.retain(|e| matches!(e, Entry::Directory(_)));
                        }
                        print_names(out, &entries, *classify);
                    }
                    Err(err) => failures.push(format!("list_param {pattern}: {err}")),
                }
            }
        }
        rule => match rule.net_rule_op() {
            Some(NetRuleOp::Set(param, command)) => {
                if let Err(err) = client.set_param(param, &command).await {
                    failures.push(format!("{param} {command:?}: {err}"));
                }
            }
            Some(NetRuleOp::List(param)) => match client.get_param(param).await {
                Ok(values) => print_values(out, &values, true, false),
                Err(err) => failures.push(format!("{param}: {err}")),
            },
            None => unreachable!("every other subcommand is matched above"),
        },
    }
    if failures.is_empty() {
        return Ok(());
    }
    Err(anyhow!(failures.join("\n"))).context(format!("lctl against {admin_addr}"))
}

/// The parameter a node lists its devices in, as Lustre's `devices` file: what `lctl dl`
/// prints.
pub const DEVICES_PARAM: &str = "devices";

/// One device of a node: its type (`obdfilter`, `mdt`) and name (`iopath-OST0003`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Lustre's device type: `obdfilter` for an object storage target, `mdt` for a metadata
    /// target.
    pub kind: &'static str,
    /// Its name; its UUID is the name and `_UUID`.
    pub name: String,
}

/// The `devices` parameter's text: a line per device as `lctl dl` prints it — number, status
/// (`UP` while the node runs), type, name, UUID. Lustre's last column, the device's reference
/// count, is left out: iopath's devices keep none.
pub fn devices_text(devices: &[Device]) -> String {
    devices
        .iter()
        .enumerate()
        .map(|(number, d)| format!("{number:3} UP {} {} {}_UUID\n", d.kind, d.name, d.name))
        .collect()
}

/// Hangs `devices` on `tree` as the read-only [`DEVICES_PARAM`] `lctl dl` prints.
pub fn register_devices(tree: &ParamTree, devices: &[Device]) -> Result<(), AdminError> {
    let text = devices_text(devices);
    Ok(tree.register(DEVICES_PARAM, Param::read_only(move || text.clone()))?)
}

/// `name=value` for one-line values; `name=` then the lines for tables; only values with `-n`.
fn print_values(out: &mut String, values: &[ParamValue], values_only: bool, names_only: bool) {
    for ParamValue { name, value, .. } in values {
        // Getters may end their value with a newline, as /proc files do; print one either way.
        let value = value.strip_suffix('\n').unwrap_or(value);
        let line = if names_only {
            format!("{name}\n")
        } else if values_only {
            format!("{value}\n")
        } else if value.contains('\n') {
            format!("{name}=\n{value}\n")
        } else {
            format!("{name}={value}\n")
        };
        out.push_str(&line);
    }
}

/// lctl prints each parameter it set, as `name=value`.
fn print_set(out: &mut String, names: &[String], value: &str) {
    for name in names {
        out.push_str(&format!("{name}={value}\n"));
    }
}

/// What a name in the parameter tree is: a parameter, or a directory of them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Param(ParamInfo),
    Directory(String),
}

/// What `pattern` names among the parameters `listed` (those matching it or lying below a
/// match): each as deep as the pattern goes — a parameter where it ends there, the directory
/// holding the parameters below it otherwise, each once — as Lustre's `list_param` and
/// `get_param -N` name them (`obdfilter.*` names each target's directory).
fn entries_at(pattern: &str, listed: &[ParamInfo]) -> Vec<Entry> {
    let depth = pattern.split('.').count();
    let mut entries: Vec<Entry> = Vec::new();
    for info in listed {
        let parts: Vec<&str> = info.name.split('.').collect();
        let entry = if parts.len() <= depth {
            Entry::Param(info.clone())
        } else {
            Entry::Directory(parts[..depth].join("."))
        };
        // Names come in order, so a directory's parameters come together.
        if entries.last() != Some(&entry) {
            entries.push(entry);
        }
    }
    entries
}

/// One name per line; with `-F`, directories end in `/` and writable parameters in `=`.
fn print_names(out: &mut String, entries: &[Entry], classify: bool) {
    for entry in entries {
        let (name, mark) = match entry {
            Entry::Param(ParamInfo { name, writable }) => (name, if *writable { "=" } else { "" }),
            Entry::Directory(name) => (name, "/"),
        };
        let mark = if classify { mark } else { "" };
        out.push_str(&format!("{name}{mark}\n"));
    }
}

/// Splits a `set_param` argument at its first `=`: the value may itself contain `=`.
fn parse_assignment(assignment: &str) -> anyhow::Result<(&str, &str)> {
    match assignment.split_once('=') {
        Some((pattern, value)) if !pattern.is_empty() => Ok((pattern, value)),
        _ => bail!("{assignment:?} is not PATTERN=VALUE"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn value(name: &str, value: &str) -> ParamValue {
        ParamValue {
            name: name.into(),
            value: value.into(),
            writable: true,
        }
    }

    #[test]
    fn values_print_like_lctl() {
        let values = [
            value("fabric.tcp0.credits", "8\n"),
            value("fabric.peers", "nid credits\n17@mem0 8\n"),
        ];
        let table: &[(bool, bool, &str)] = &[
            (
                false,
                false,
                "fabric.tcp0.credits=8\nfabric.peers=\nnid credits\n17@mem0 8\n",
            ),
            (true, false, "8\nnid credits\n17@mem0 8\n"),
            (false, true, "fabric.tcp0.credits\nfabric.peers\n"),
        ];
        for &(values_only, names_only, expected) in table {
            let mut out = String::new();
            print_values(&mut out, &values, values_only, names_only);
            assert_eq!(out, expected, "-n {values_only} -N {names_only}");
        }
        let mut out = String::new();
        print_values(&mut out, &[value("a.b", "")], false, false);
        assert_eq!(out, "a.b=\n");
    }

    #[test]
    fn set_and_list_print_like_lctl() {
        let mut out = String::new();
        print_set(&mut out, &["a.x.max".into(), "a.y.max".into()], "3");
        assert_eq!(out, "a.x.max=3\na.y.max=3\n");
        let listed = [
            ParamInfo {
                name: "a.credits".into(),
                writable: true,
            },
            ParamInfo {
                name: "a.sent".into(),
                writable: false,
            },
        ];
        let entries: Vec<Entry> = listed.iter().cloned().map(Entry::Param).collect();
        let mut out = String::new();
        print_names(&mut out, &entries, true);
        assert_eq!(out, "a.credits=\na.sent\n");
        let mut out = String::new();
        print_names(&mut out, &entries, false);
        assert_eq!(out, "a.credits\na.sent\n");
        // As deep as the pattern: `a` is a directory, `a.*` its parameters.
        let mut out = String::new();
        print_names(&mut out, &entries_at("a", &listed), true);
        assert_eq!(out, "a/\n");
        assert_eq!(entries_at("a.*", &listed), entries);
        let targets = [
            ParamInfo {
                name: "obdfilter.fs-OST0000.last_committed".into(),
                writable: false,
            },
            ParamInfo {
                name: "obdfilter.fs-OST0000.sync_journal".into(),
                writable: true,
            },
            ParamInfo {
                name: "obdfilter.fs-OST0002.last_committed".into(),
                writable: false,
            },
        ];
        let mut out = String::new();
        print_names(&mut out, &entries_at("obdfilter.*", &targets), false);
        assert_eq!(out, "obdfilter.fs-OST0000\nobdfilter.fs-OST0002\n");
    }

    #[test]
    fn devices_list_as_lctl_dl_lists_them() {
        let devices = [
            Device {
                kind: "obdfilter",
                name: "scratch-OST0001".into(),
            },
            Device {
                kind: "obdfilter",
                name: "scratch-OST0003".into(),
            },
        ];
        assert_eq!(
            devices_text(&devices),
            "  0 UP obdfilter scratch-OST0001 scratch-OST0001_UUID\n\
             \x20 1 UP obdfilter scratch-OST0003 scratch-OST0003_UUID\n"
        );
        assert_eq!(devices_text(&[]), "");
    }

    #[test]
    fn assignments_split_at_the_first_equals() {
        assert_eq!(parse_assignment("a.b=3").unwrap(), ("a.b", "3"));
        assert_eq!(parse_assignment("a.b=x=y").unwrap(), ("a.b", "x=y"));
        assert_eq!(parse_assignment("a.b=").unwrap(), ("a.b", ""));
        assert!(parse_assignment("a.b").is_err());
        assert!(parse_assignment("=3").is_err());
    }

    /// The subcommands parse as lctl spells them.
    #[test]
    fn command_line_parses() {
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[command(subcommand)]
            cmd: LctlCommand,
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("lctl").chain(args.iter().copied()))
        };
        assert_eq!(
            parse(&["get_param", "-n", "a.*", "b"]).unwrap().cmd,
            LctlCommand::GetParam {
                values_only: true,
                names_only: false,
                patterns: vec!["a.*".into(), "b".into()],
            }
        );
        assert_eq!(
            parse(&["set_param", "a.b=3"]).unwrap().cmd,
            LctlCommand::SetParam {
                quiet: false,
                assignments: vec!["a.b=3".into()],
            }
        );
        assert_eq!(
            parse(&["list_param", "-F", "a"]).unwrap().cmd,
            LctlCommand::ListParam {
                classify: true,
                recursive: false,
                directories: false,
                patterns: vec!["a".into()],
            }
        );
        assert_eq!(parse(&["dl"]).unwrap().cmd, LctlCommand::DeviceList);
        assert!(parse(&["get_param"]).is_err());
        assert!(parse(&["get_param", "-n", "-N", "a"]).is_err());
        assert!(parse(&["set_param"]).is_err());
    }
}
