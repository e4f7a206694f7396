//! The `iopath` binary as a user runs it: selftest in every mode and over sizes, and lctl
//! against a running node's admin service.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::{Command, Stdio};

use iopath_plot::check::Drawing;

mod common;
use common::iopath;

fn selftest_json(args: &[&str]) -> serde_json::Value {
    let output = iopath()
        .args(["selftest", "--seconds", "0.5", "--json"])
        .args(args)
        .output()
        .expect("run iopath selftest");
    assert!(
        output.status.success(),
        "iopath selftest {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("selftest --json prints JSON")
}

#[test]
fn selftest_runs_on_every_transport_and_mode() {
    for args in [
        &["--transport", "mem"][..],
        &["--transport", "tcp"],
        &[
            "--transport",
            "tcp",
            "--processes",
            "--clients",
            "2",
            "--servers",
            "2",
        ],
        &[
            "--transport",
            "mem",
            "--mode",
            "read",
            "--size",
            "3m",
            "--checksum",
            "crc32c",
        ],
    ] {
        let report = selftest_json(args);
        for test in report["tests"].as_array().unwrap() {
            assert_eq!(test["errors"], 0, "{args:?}: {test}");
            assert!(test["rpcs"].as_u64().unwrap() > 0, "{args:?}: {test}");
        }
        assert!(report["bulk_mib_s"].as_f64().unwrap() > 0.0);
        assert!(report["ping_rpc_s"].as_f64().unwrap() > 0.0);
        assert!(
            report["ratio"].is_null(),
            "no baseline asked for, so no ratio"
        );
    }
}

#[test]
fn a_selftest_sweep_reports_and_draws_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("sweep.svg");
    let output = iopath()
        .args(["selftest", "--seconds", "0.2", "--json", "--test", "brw"])
        .args(["--sizes", "4k,64k,1m", "--svg"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = report["runs"].as_array().unwrap();
    let sizes: Vec<u64> = runs
        .iter()
        .map(|r| r["size_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [4 << 10, 64 << 10, 1 << 20]);
    let drawing = Drawing::read_clean(&std::fs::read_to_string(&svg).unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    let [brw] = &drawing.series[..] else {
        panic!("one line, brw write: {:?}", drawing.series);
    };
    assert_eq!(brw.points.len(), 3);
}

#[test]
fn selftest_refuses_impossible_settings() {
    for (args, expected) in [
        (&["--processes"][..], "needs --transport tcp"),
        (&["--clients", "0"], "at least one client"),
        (&["--size", "0"], "--size must be"),
        (&["--size", "1x"], "unknown unit"),
        (&["--checksum", "md5"], "unknown checksum"),
        (&["--sizes", "4k,4k"], "lists 4 KiB twice"),
        (&["--sizes", "4k", "--size", "1m"], "cannot be used with"),
        (&["--svg", "plot.svg"], "--sizes"),
    ] {
        let output = iopath()
            .args(["selftest", "--seconds", "0.1"])
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// The experiments refuse a machine they cannot lay out, naming the option, before they start
/// a stack.
#[test]
fn the_torus_experiments_refuse_machines_they_cannot_lay_out() {
    for (args, expected) in [
        (
            &[
                "placement",
                "--dims",
                "2x2x2",
                "--servers",
                "7",
                "--targets",
                "1",
            ][..],
            "--dims: too small for 7 servers and the MDS",
        ),
        (
            &["routing", "--dims", "2x2x2"],
            "--dims: too small for 8 routers and the MDS",
        ),
        (
            &["routing", "--servers-per-leaf", "5"],
            "--servers-per-leaf: 1 to 4",
        ),
        (&["routing", "--schemes", "ecmp"], "use one of baseline"),
        (
            &["routing", "--card-over-server", "0"],
            "--card-over-server: 0.25 to 16",
        ),
    ] {
        let output = iopath().arg("bench").args(args).output().unwrap();
        assert!(!output.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn lctl_reads_and_refuses_through_the_admin_service_and_shuts_a_node_down() {
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("admin.secret");
    let secret = iopath_admin::Secret::create(&secret_file).unwrap();
    let mut server = iopath()
        .args(["selftest-node", "--secret-file"])
        .arg(&secret_file)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let words = common::ready_words(server.stdout.take().unwrap())
        .unwrap_or_else(|line| panic!("selftest-node said {line:?}"));
    let (nid, admin) = (words[0].clone(), words[1].clone());
    let lctl = |args: &[&str]| {
        iopath()
            .args(["lctl", "--admin", &admin])
            .args(args)
            .output()
            .unwrap()
    };

    let nis = lctl(&["get_param", "nis"]);
    assert!(
        nis.status.success(),
        "{}",
        String::from_utf8_lossy(&nis.stderr)
    );
    let text = String::from_utf8_lossy(&nis.stdout);
    assert!(
        text.contains(&nid) && text.contains("max") && text.contains("min"),
        "{text}"
    );

    let stats = lctl(&["get_param", "-n", "stats"]);
    assert!(String::from_utf8_lossy(&stats.stdout).contains("send_count"));

    let secret_arg = secret_file.to_str().unwrap();
    let refused = lctl(&["--secret-file", secret_arg, "set_param", "nis=1"]);
    assert!(!refused.status.success(), "nis is read-only");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("parameter nis is read-only"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let missing = lctl(&["get_param", "no.such.param"]);
    assert!(!missing.status.success());
    assert!(
        !String::from_utf8_lossy(&missing.stderr).is_empty(),
        "a missing param says why"
    );

    // A clean shutdown through the admin service ends the process.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let client = iopath_admin::Client::connect(admin.parse().unwrap())
            .await
            .unwrap();
        let status = client.status().await.unwrap();
        assert_eq!(status.nids, vec![nid.clone()]);
        // Not without the secret: the node runs on.
        let refused = client.shutdown("test").await.unwrap_err().to_string();
        assert!(
            refused.contains("shutdown refused: no admin secret was sent"),
            "{refused}"
        );
        assert_eq!(client.status().await.unwrap().nids, vec![nid.clone()]);
        client.with_secret(secret).shutdown("test").await.unwrap();
    });
    let status = server.wait().unwrap();
    assert!(status.success(), "server exit: {status}");
}

#[test]
fn routed_selftest_compares_with_direct_and_reports_router_memory() {
    let report = selftest_json(&[
        "--transport",
        "tcp",
        "--processes",
        "--routers",
        "1",
        "--compare-direct",
    ]);
    for test in report["tests"].as_array().unwrap() {
        assert_eq!(test["errors"], 0, "{test}");
    }
    for key in [
        "routed_mib_s",
        "direct_mib_s",
        "ratio",
        "extra_latency_per_hop_us",
    ] {
        assert!(report[key].is_number(), "{key} missing: {report}");
    }
    assert_eq!(report["ratio"], report["routed_ratio"]);
    for key in [
        "routed_cpu_ceiling_mib_s",
        "routed_ceiling_ratio",
        "routed_relay_ceiling_mib_s",
        "routed_relay_ceiling_ratio",
        "routed_bare_ratio",
        "direct_bare_ratio",
    ] {
        assert!(report[key].as_f64().unwrap() > 0.0, "{key}: {report}");
    }
    // The bare floor, measured in the same run: round trips and streams, direct and relayed.
    let bare = &report["bare"];
    for key in ["round_trip_us", "relayed_round_trip_us"] {
        assert!(bare[key].as_f64().unwrap() > 0.0, "{key}: {bare}");
    }
    for (layout, relays) in [("direct", 0), ("relayed", 1)] {
        assert_eq!(bare[layout]["relays"], relays, "{bare}");
        assert!(bare[layout]["bytes"].as_u64().unwrap() > 0, "{bare}");
        assert!(
            bare[layout]["cpu"]["busy_cores"].as_f64().unwrap() > 0.0,
            "{bare}"
        );
    }
    // Every bulk test says which processes spent the CPU: the router only when routed.
    for test in report["tests"].as_array().unwrap() {
        if !test["test"].as_str().unwrap().starts_with("brw") {
            continue;
        }
        let per_gib = &test["processes_cpu"]["core_s_per_gib"];
        for who in ["clients", "servers"] {
            assert!(per_gib[who].as_f64().unwrap() > 0.0, "{who}: {test}");
        }
        let routers = per_gib["routers"].as_f64().unwrap();
        match test["layout"].as_str().unwrap() {
            "routed" => assert!(routers > 0.0, "{test}"),
            _ => assert_eq!(routers, 0.0, "{test}"),
        }
    }
    let rss = report["router_peak_rss_mib"].as_array().unwrap();
    assert_eq!(rss.len(), 1);
    // The router's 64 large buffers of 1 MiB bound what it holds for peers; the rest is code
    // and runtime. Generous, but a router that buffered the offered load would blow through it.
    assert!(
        rss[0].as_f64().unwrap() < 64.0 + 96.0,
        "router peak RSS {rss:?} MiB"
    );
}

#[test]
fn lnetctl_adds_shows_and_refuses_routes() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("admin.secret");
    iopath_admin::Secret::create(&secret).unwrap();
    let mut router = iopath()
        .args(["selftest-node", "--secret-file"])
        .arg(&secret)
        .arg("router")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let admin = common::ready_words(router.stdout.take().unwrap())
        .unwrap_or_else(|line| panic!("selftest-node said {line:?}"))[1]
        .clone();
    let lnetctl = |args: &[&str]| {
        iopath()
            .args(["lnetctl", "--admin", &admin, "--secret-file"])
            .arg(&secret)
            .arg("route")
            .args(args)
            .output()
            .unwrap()
    };
    // A route edit is a change: refused without the secret.
    let refused = iopath()
        .args(["lnetctl", "--admin", &admin, "route", "del"])
        .args(["--net", "tcp7", "--gateway", "127.0.0.1:9@tcp0"])
        .env_remove("IOPATH_ADMIN_SECRET_FILE")
        .output()
        .unwrap();
    assert!(
        !refused.status.success()
            && String::from_utf8_lossy(&refused.stderr).contains("no admin secret was sent"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let added = lnetctl(&[
        "add",
        "--net",
        "tcp7",
        "--gateway",
        "127.0.0.1:9@tcp0",
        "--hop",
        "10",
        "--priority",
        "2",
    ]);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    // lnetctl's YAML, read with a YAML parser: the route as added.
    let shown = String::from_utf8_lossy(&lnetctl(&["show", "-v"]).stdout).into_owned();
    let yaml: serde_norway::Value = serde_norway::from_str(&shown).unwrap();
    let routes = yaml["route"].as_sequence().unwrap();
    let route = routes
        .iter()
        .find(|r| r["net"] == "tcp7")
        .unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(route["gateway"], "127.0.0.1:9@tcp0");
    assert_eq!(route["hop"], 10);
    assert_eq!(route["priority"], 2);
    assert_eq!(route["state"], "up");
    // lctl's views of the same, in LNet's columns and order (proc_lnet_routes, _routers).
    let routes = common::lctl(&admin, &["get_param", "-n", "routes"]);
    let row = routes.lines().find(|l| l.starts_with("tcp7 ")).unwrap();
    assert_eq!(
        routes.lines().nth(1),
        Some("net      hops priority   state router"),
        "{routes}"
    );
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["tcp7", "10", "2", "up", "127.0.0.1:9@tcp0"],
        "{routes}"
    );
    let routers = common::lctl(&admin, &["get_param", "-n", "routers"]);
    let header: Vec<&str> = routers.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header.first(), Some(&"rtr_ref"), "{routers}");
    assert_eq!(header.last(), Some(&"router"), "{routers}");
    // The node's other views, in lnetctl's YAML too.
    let show = |what: &str| -> serde_norway::Value {
        let out = iopath()
            .args(["lnetctl", "--admin", &admin, what, "show", "-v"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_norway::from_slice(&out.stdout).unwrap()
    };
    let nets = show("net");
    let ni = &nets["net"][0]["local NI(s)"][0];
    assert!(ni["nid"].as_str().unwrap().contains('@'), "{nets:?}");
    assert_eq!(ni["status"], "up");
    assert!(ni["tunables"]["credits"].as_i64().unwrap() > 0);
    assert!(show("peer")["peer"].as_sequence().is_some());
    let stats = show("stats");
    assert!(
        stats["statistics"]["send_count"].as_u64().is_some(),
        "{stats:?}"
    );
    for (args, expected) in [
        (
            &["add", "--net", "tcp0", "--gateway", "127.0.0.1:9@tcp1"][..],
            "is on tcp0 itself",
        ),
        (
            &["add", "--net", "tcp7", "--gateway", "127.0.0.1:9@tcp0"],
            "exists",
        ),
        (
            &[
                "add",
                "--net",
                "tcp8",
                "--gateway",
                "127.0.0.1:9@tcp0",
                "--hop",
                "0",
            ],
            "hops must be",
        ),
        (
            &["add", "--net", "ib0", "--gateway", "127.0.0.1:9@tcp0"],
            "unknown network type",
        ),
        (
            &["del", "--net", "tcp9", "--gateway", "127.0.0.1:9@tcp0"],
            "no route",
        ),
    ] {
        let out = lnetctl(args);
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert!(
        lnetctl(&["del", "--net", "tcp7", "--gateway", "127.0.0.1:9@tcp0"])
            .status
            .success()
    );
    drop(router.stdin.take());
    assert!(router.wait().unwrap().success());
}

#[test]
fn completion_scripts_are_generated_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = iopath().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for command in ["mount", "lfs", "bench", "topo"] {
            assert!(script.contains(command), "{shell} completes {command}");
        }
    }
    // bash can read what it is given.
    let out = iopath().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("iopath.bash");
    std::fs::write(&file, &out.stdout).unwrap();
    let status = Command::new("bash").arg("-n").arg(&file).status().unwrap();
    assert!(status.success(), "bash -n accepts the script");
    assert!(
        !iopath()
            .args(["completions", "tcsh"])
            .output()
            .unwrap()
            .status
            .success(),
        "an unknown shell is refused"
    );
}

#[test]
fn man_pages_are_generated_from_the_flags() {
    let out = iopath().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH iopath 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let status = iopath()
        .args(["man", "--dir"])
        .arg(dir.path().join("man1"))
        .status()
        .unwrap();
    assert!(status.success());
    let mount = std::fs::read_to_string(dir.path().join("man1/iopath-mount.1")).unwrap();
    assert!(mount.contains("\\-\\-fyod"), "{mount}");
    assert!(dir.path().join("man1/iopath-lfs-setstripe.1").exists());
    // What a man page is read for: the synopsis names each option's value, the variables
    // the command reads, examples, and where else to look.
    let ior = std::fs::read_to_string(dir.path().join("man1/iopath-bench-ior.1")).unwrap();
    assert!(ior.contains("[\\fB\\-b\\fR \\fISIZE\\fR]"), "{ior}");
    for section in [".SH ENVIRONMENT", ".SH EXAMPLES", ".SH \"SEE ALSO\""] {
        assert!(ior.contains(section), "{section}: {ior}");
    }
    assert!(
        ior.contains("IOPATH_LOG") && ior.contains("ior(1)"),
        "{ior}"
    );
    assert!(mount.contains("\\fBIOPATH_MDS\\fR"), "{mount}");
    assert!(mount.contains("iopath(1)"), "its parent: {mount}");
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    for args in [
        &["topo", "layout", "--csv"][..],
        &["topo", "layout", "--json"][..],
        &["completions", "bash"][..],
        &["man"][..],
    ] {
        let mut child = iopath()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before the first line (as after `| head -0`), so every one
        // of these writes into a closed pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "{args:?} said {err}");
        assert_eq!(
            out.status.code(),
            Some(141),
            "{args:?} ends as a process SIGPIPE ended would"
        );
    }
}

#[test]
fn the_log_variables_are_documented_and_rust_log_is_honoured() {
    let help = iopath().arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("IOPATH_LOG") && help.contains("RUST_LOG"),
        "{help}"
    );
    // RUST_LOG alone turns on info messages (a stack says its nodes started).
    let out = iopath()
        .args(["up", "--preset", "spider-mini"])
        .env_remove("IOPATH_LOG")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("INFO"), "{err}");
    // IOPATH_LOG wins over RUST_LOG.
    let out = iopath()
        .args(["up", "--preset", "spider-mini"])
        .env("IOPATH_LOG", "error")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("INFO"));
    // A value that is no level and no filter is an error, not a log that shows nothing.
    for bad in ["verbose", "info,iopath_fabric=loud"] {
        let out = iopath()
            .args(["topo", "layout"])
            .env("IOPATH_LOG", bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.starts_with("iopath: error: IOPATH_LOG="), "{err}");
    }
}

/// `--help` and `--version` are results too: a full disk ends them with the reason and
/// status 1, a reader gone with 141, as any command's output.
#[test]
fn help_that_cannot_be_written_fails_with_the_reason() {
    for args in [&["--help"][..], &["lfs", "--help"], &["--version"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let output = iopath().args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
    }
    // Usage errors are still clap's, on standard error, status 2.
    let output = iopath().arg("--no-such-flag").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn each_commands_help_names_the_preset_it_runs_by_default() {
    for (command, default) in [
        (&["up"][..], "asci-red-mini"),
        (&["demo"][..], "asci-red-mini"),
        (&["bench", "mount"][..], "spider-mini"),
        (&["bench", "iorcd"][..], "spider-mini-routed"),
        (&["bench", "monitoring"][..], "spider-mini-routed"),
        (&["soak"][..], "spider-mini-routed"),
        (&["trace"][..], "spider-mini-routed"),
    ] {
        let out = iopath().args(command).arg("--help").output().unwrap();
        assert!(out.status.success(), "{command:?} --help");
        let help = String::from_utf8_lossy(&out.stdout);
        // The option's help, which may wrap, up to the next option.
        let from = help
            .find("--preset <PRESET>")
            .unwrap_or_else(|| panic!("{command:?} --help has no --preset: {help}"));
        let rest = &help[from..];
        let end = rest.find("--stack <").unwrap_or(rest.len());
        let line = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            line.contains(&format!("[default: {default}]")),
            "{command:?}: {line}"
        );
        assert_eq!(line.matches("[default:").count(), 1, "{command:?}: {line}");
    }
}
