//! `iopath launch` inside a real Slurm job: a local Slurm (munged, slurmctld, and a slurmd per
//! host, each slurmd inside its host's network namespace, so the steps srun starts there run on
//! that host's subnets), configured by this test under a temporary directory; an sbatch job
//! launches the spider-cluster preset with srun steps and runs IOR against it. Slurm and the
//! namespaces are stopped and removed afterwards, also when the test fails.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use iopath_bench::netns::{COMPUTE, Cluster, HOSTS, MANAGEMENT, STORAGE};

/// How long Slurm may take to see every slurmd, and the job to run.
const SLURM_UP_TIMEOUT: Duration = Duration::from_secs(60);
const JOB_TIMEOUT: Duration = Duration::from_secs(240);

/// The Slurm daemons this test started; dropped, they are stopped.
struct Slurm {
    dir: PathBuf,
    conf: PathBuf,
}

/// Fails loudly where Slurm is not installed.
fn require_slurm() {
    for tool in ["slurmctld", "slurmd", "sbatch", "munged", "scontrol"] {
        common::require_tool(tool, "slurm-wlm munge");
    }
    assert!(
        Path::new("/etc/munge/munge.key").exists(),
        "/etc/munge/munge.key is missing: installing munge makes it (or run mungekey)"
    );
}

/// The cgroup plugin slurmd can use here: v2 where /sys/fs/cgroup is cgroup2, v1 otherwise.
fn cgroup_plugin() -> &'static str {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let unified = mounts.lines().any(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        fields.get(1) == Some(&"/sys/fs/cgroup") && fields.get(2) == Some(&"cgroup2")
    });
    if unified { "cgroup/v2" } else { "cgroup/v1" }
}

fn run(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Slurm {
    /// Writes the configuration and starts munged, slurmctld on c0 and a slurmd on each host
    /// (`n0` .. `n4`, in the cluster's host order), then waits until every node is idle.
    fn start(cluster: &Cluster, dir: &Path) -> Slurm {
        require_slurm();
        let dir = dir.to_owned();
        for sub in ["state", "log", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let d = dir.display();
        let hostname = run(&mut Command::new("hostname")).trim().to_owned();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut conf = format!(
            "ClusterName=iopath\n\
             SlurmctldHost={hostname}({ctld})\n\
             SlurmctldPort=6817\nSlurmdPort=6818\n\
             SlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nCredType=cred/munge\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool/%n\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd-%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd-%n.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n\
             SchedulerType=sched/builtin\nSelectType=select/linear\nReturnToService=2\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\nInactiveLimit=0\nKillWait=5\nMinJobAge=5\n",
            ctld = cluster.addr(MANAGEMENT, 0),
        );
        for (n, _) in HOSTS.iter().enumerate() {
            conf.push_str(&format!(
                "NodeName=n{n} NodeHostname={hostname} NodeAddr={} CPUs={cpus} RealMemory=100 State=UNKNOWN\n",
                cluster.addr(MANAGEMENT, n)
            ));
        }
        conf.push_str("PartitionName=iopath Nodes=ALL Default=YES MaxTime=10 State=UP\n");
        let conf_path = dir.join("slurm.conf");
        std::fs::write(&conf_path, conf).unwrap();
        std::fs::write(
            dir.join("cgroup.conf"),
            format!(
                "CgroupPlugin={}\nCgroupMountpoint=/sys/fs/cgroup\nCgroupAutomount=no\n",
                cgroup_plugin()
            ),
        )
        .unwrap();
        let slurm = Slurm {
            dir: dir.clone(),
            conf: conf_path.clone(),
        };
        run(Command::new("munged").args([
            "--force",
            &format!("--socket={d}/munge.sock"),
            &format!("--pid-file={d}/munged.pid"),
            &format!("--log-file={d}/log/munged.log"),
            &format!("--seed-file={d}/munge.seed"),
        ]));
        run(cluster
            .on("c0", Path::new("slurmctld"))
            .arg("-f")
            .arg(&conf_path));
        for (n, (host, _, _)) in HOSTS.iter().enumerate() {
            std::fs::create_dir_all(dir.join("spool").join(format!("n{n}"))).unwrap();
            run(cluster
                .on(host, Path::new("slurmd"))
                .arg("-f")
                .arg(&conf_path)
                .args(["-N", &format!("n{n}")]));
        }
        let deadline = Instant::now() + SLURM_UP_TIMEOUT;
        loop {
            let states = run(slurm
                .command(cluster, "sinfo")
                .args(["-h", "-N", "-o", "%T"]));
            let idle = states.lines().filter(|s| s.trim() == "idle").count();
            if idle == HOSTS.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Slurm's nodes did not all come up: {states}; slurmd's log: {}",
                std::fs::read_to_string(dir.join("log/slurmd-n1.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        slurm
    }

    /// A Slurm client command, run on c0 with this Slurm's configuration.
    fn command(&self, cluster: &Cluster, program: &str) -> Command {
        let mut command = cluster.on("c0", Path::new(program));
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Submits `job/job.sh` with `sbatch --wait` (its output in `job/job.out`, its working
    /// directory `job`, `env`'s variables beside this one's) and waits for its end,
    /// cancelling it past [`JOB_TIMEOUT`]; its exit status and output.
    fn batch(
        &self,
        cluster: &Cluster,
        job: &Path,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> (std::process::ExitStatus, String) {
        let mut sbatch = self.command(cluster, "sbatch");
        sbatch
            .envs(env.iter().copied())
            .args(["--wait", "-t", "5"])
            .arg(format!("--output={}", job.join("job.out").display()))
            .arg(format!("--chdir={}", job.display()))
            .arg(job.join("job.sh"));
        let mut sbatch = sbatch.spawn().unwrap();
        let deadline = Instant::now() + JOB_TIMEOUT;
        let status = loop {
            if let Some(status) = sbatch.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.command(cluster, "scancel").arg("--user=root").status();
                let _ = sbatch.kill();
                panic!(
                    "the job did not end within {} s: {}",
                    JOB_TIMEOUT.as_secs(),
                    std::fs::read_to_string(job.join("job.out")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        let out = std::fs::read_to_string(job.join("job.out")).unwrap_or_default();
        (status, out)
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let mut pids: Vec<PathBuf> = (0..HOSTS.len())
            .map(|n| self.dir.join(format!("slurmd-n{n}.pid")))
            .collect();
        pids.push(self.dir.join("slurmctld.pid"));
        pids.push(self.dir.join("munged.pid"));
        for pid in pids {
            if let Ok(pid) = std::fs::read_to_string(&pid) {
                let _ = Command::new("kill").args(["-TERM", pid.trim()]).status();
            }
        }
    }
}

#[test]
fn launch_inside_an_sbatch_job_runs_spider_across_slurm_nodes_and_ior_reads_back() {
    // Declared first, dropped last: Slurm and the nodes are gone before their files.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(233).unwrap();
    let slurm = Slurm::start(&cluster, &dir.path().join("slurm"));
    // Slurm knows one address per node (the management one); the hostfile gives each node's
    // addresses on the stack's subnets, and srun still starts the steps.
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let mut hosts = String::new();
    for (n, &(_, compute, storage)) in HOSTS.iter().enumerate() {
        hosts.push_str(&format!("n{n}"));
        for (subnet, on) in [(COMPUTE, compute), (STORAGE, storage), (MANAGEMENT, true)] {
            if on {
                hosts.push_str(&format!(" {}", cluster.addr(subnet, n)));
            }
        }
        hosts.push('\n');
    }
    std::fs::write(job.join("hosts"), hosts).unwrap();
    let iopath = env!("CARGO_BIN_EXE_iopath");
    let script = format!(
        "#!/bin/sh\n\
         #SBATCH -N 5\n#SBATCH -t 5\n#SBATCH -o {out}\n\
         set -e\ncd {job}\n\
         {iopath} launch --preset spider-cluster --hostfile hosts --subnet compute={compute} \
         --subnet storage={storage} --admin-subnet {management} --out stack.toml --dir nodes & launch=$!\n\
         n=0; while [ ! -s stack.toml ] && [ $n -lt 300 ]; do sleep 0.2; n=$((n+1)); done\n\
         {iopath} bench ior --attach stack.toml -w -r -F -t 1m -b 16m --dir {job}\n\
         {iopath} lfs --stack stack.toml df\n\
         kill $launch; wait $launch\n\
         {iopath} launch --preset spider-cluster --subnet compute={management} \
         --subnet storage={management} --print --out printed.toml > printed.out\n\
         echo job done\n",
        out = job.join("job.out").display(),
        job = job.display(),
        compute = cluster.subnet(COMPUTE),
        storage = cluster.subnet(STORAGE),
        management = cluster.subnet(MANAGEMENT),
    );
    std::fs::write(job.join("job.sh"), script).unwrap();
    let (status, out) = slurm.batch(&cluster, &job, &[]);
    eprintln!("{out}");
    assert!(status.success(), "the job failed ({status}): {out}");
    // Each server node ran on the Slurm node the preset puts it on.
    for (node, host) in [
        ("rtr0", "n1"),
        ("rtr1", "n2"),
        ("oss0", "n3"),
        ("oss1", "n4"),
        ("mds", "n3"),
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("{node} ")) && l.contains(&format!(" {host} "))),
            "{node} on {host}: {out}"
        );
    }
    assert!(
        out.contains("clients c0 c1 c2 c3 run where the application runs, on n0"),
        "{out}"
    );
    assert!(
        out.contains("verified: 64 MiB read back and checked word by word"),
        "{out}"
    );
    assert!(
        out.contains("filesystem_summary:"),
        "lfs df through the routers: {out}"
    );
    assert!(
        out.contains("stopped\njob done"),
        "launch stopped every node: {out}"
    );
    // Without a hostfile, launch reads the job's hosts from Slurm itself (its node list and
    // each node's NodeAddr): every network on the management subnet, the commands are srun
    // steps on the nodes Slurm names.
    let printed = std::fs::read_to_string(job.join("printed.out")).unwrap();
    assert!(printed.contains("the Slurm job's node list"), "{printed}");
    assert!(
        printed.lines().any(|l| l.contains("--nodelist=n1")
            && l.contains(&format!("--admin {}:0", cluster.addr(MANAGEMENT, 1)))),
        "{printed}"
    );
}

/// The batch script docs/cluster.md gives, as written there.
fn documented_batch_script() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cluster.md"))
            .unwrap();
    let after = doc
        .split_once("In a batch script")
        .expect("docs/cluster.md has a batch script")
        .1;
    let body = after.split_once("```sh\n").unwrap().1;
    body.split_once("```").unwrap().0.to_owned()
}

#[test]
fn the_batch_script_in_docs_cluster_md_runs_as_written_on_split_subnets() {
    // Declared first, dropped last: Slurm and the nodes are gone before their files.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(236).unwrap();
    let slurm = Slurm::start(&cluster, &dir.path().join("slurm"));
    let job = dir.path().join("job");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&job).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    // The doc's script with its subnets changed, nothing else: no hostfile (Slurm knows each
    // node by its management address alone), no admin subnet. The compute host reaches the
    // storage hosts only over the management subnet.
    let documented = documented_batch_script();
    let script = documented
        .replace("10.1.0.0/16", &cluster.subnet(COMPUTE))
        .replace("10.2.0.0/16", &cluster.subnet(STORAGE));
    assert_eq!(
        script.matches(&cluster.subnet(COMPUTE)).count()
            + script.matches(&cluster.subnet(STORAGE)).count(),
        2,
        "the doc's script names the compute and storage subnets once each:\n{documented}"
    );
    std::fs::write(job.join("job.sh"), &script).unwrap();
    // iopath on the job's PATH, as on a cluster's; the nodes' state under TMPDIR.
    let bin = Path::new(env!("CARGO_BIN_EXE_iopath")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (status, out) = slurm.batch(
        &cluster,
        &job,
        &[("PATH", path.as_ref()), ("TMPDIR", tmp.as_os_str())],
    );
    eprintln!("{out}");
    assert!(status.success(), "the job failed ({status}): {out}");
    assert!(
        out.contains("verified: 256 MiB read back and checked word by word"),
        "{out}"
    );
    // Each node on its host; each admin service where the compute host reaches it: a
    // router's on its compute address, a storage host's on its management address.
    for (node, host, admin) in [
        ("rtr0", "n1", cluster.addr(COMPUTE, 1)),
        ("rtr1", "n2", cluster.addr(COMPUTE, 2)),
        ("oss0", "n3", cluster.addr(MANAGEMENT, 3)),
        ("oss1", "n4", cluster.addr(MANAGEMENT, 4)),
        ("mds", "n3", cluster.addr(MANAGEMENT, 3)),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{node} "))
                && l.contains(&format!(" {host} "))
                && l.contains(&format!(" {admin}:"))),
            "{node} on {host}, its admin service on {admin}: {out}"
        );
    }
    assert!(!out.contains("cannot reach"), "{out}");
    // The nodes kept their state under the job's TMPDIR.
    assert!(tmp.join("iopath-spider-cluster/oss0").is_dir(), "{out}");
}
