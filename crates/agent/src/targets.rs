//! Which processes the agent acts on: a list of pids, a process-name pattern, the members
//! of a cgroup, or any union of them. Re-read at every rescan, so processes that start
//! later join and those that exit leave.
//!
//! The agent never targets itself. A name pattern is a regular expression matched against
//! the process's `comm` (`/proc/PID/comm`: the executable's name, at most 15 bytes), found
//! anywhere in it unless anchored (`^redis-server$`). A cgroup is a cgroup v2 directory
//! (`/sys/fs/cgroup/system.slice/redis.service`, or that path relative to
//! `/sys/fs/cgroup`); its `cgroup.procs` lists the members (not those of child cgroups).

use crate::units::HostPid;
use regex::Regex;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where cgroup v2 is mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Why a selector cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// Nothing selects any process.
    #[error(
        "no targets: give --pid, --name or --cgroup (or agent.pids, agent.name, agent.cgroup)"
    )]
    Empty,
    /// The pattern is not a regular expression.
    #[error("the process name pattern `{pattern}` is not a regular expression: {error}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// The parser's complaint.
        error: regex::Error,
    },
    /// The cgroup's member list cannot be read.
    #[error(
        "cannot read the members of cgroup {path}: {error} (a cgroup v2 directory is expected)"
    )]
    Cgroup {
        /// `cgroup.procs`.
        path: PathBuf,
        /// The read's error.
        error: io::Error,
    },
    /// `/proc` cannot be listed.
    #[error("cannot list /proc: {0}")]
    Proc(io::Error),
}

/// The processes to act on.
#[derive(Clone, Debug)]
pub struct Selector {
    pids: Vec<HostPid>,
    name: Option<Regex>,
    cgroup_procs: Option<PathBuf>,
    own: u32,
}

/// A process a selector chose, with its `comm`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// The process.
    pub pid: HostPid,
    /// Its `comm` (empty if it could not be read).
    pub comm: String,
}

impl Selector {
    /// A selector of `pids`, processes whose name matches `name`, and members of `cgroup`.
    /// Checks the pattern and that the cgroup's members can be read.
    pub fn new(
        pids: Vec<HostPid>,
        name: Option<&str>,
        cgroup: Option<&Path>,
    ) -> Result<Selector, SelectError> {
        if pids.is_empty() && name.is_none() && cgroup.is_none() {
            return Err(SelectError::Empty);
        }
        let name = name
            .map(|p| {
                Regex::new(p).map_err(|error| SelectError::Pattern {
                    pattern: p.to_string(),
                    error,
                })
            })
            .transpose()?;
        let cgroup_procs = cgroup.map(|c| {
            let dir = if c.is_absolute() {
                c.to_path_buf()
            } else {
                Path::new(CGROUP_ROOT).join(c)
            };
            dir.join("cgroup.procs")
        });
        if let Some(p) = &cgroup_procs {
            fs::read_to_string(p).map_err(|error| SelectError::Cgroup {
                path: p.clone(),
                error,
            })?;
        }
        Ok(Selector {
            pids,
            name,
            cgroup_procs,
            own: std::process::id(),
        })
    }

    /// The pids given explicitly.
    pub fn explicit(&self) -> &[HostPid] {
        &self.pids
    }

    /// Whether only explicit pids select processes (no pattern, no cgroup): then no new
    /// target can appear.
    pub fn only_explicit(&self) -> bool {
        self.name.is_none() && self.cgroup_procs.is_none()
    }

    /// The processes selected now, by pid, without the agent itself. Processes that exit
    /// while being read are left out.
    pub fn select(&self) -> Result<Vec<Selected>, SelectError> {
        let mut pids: Vec<u32> = self.pids.iter().map(|p| p.0).collect();
        if let Some(path) = &self.cgroup_procs {
            let text = fs::read_to_string(path).map_err(|error| SelectError::Cgroup {
                path: path.clone(),
                error,
            })?;
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        if let Some(re) = &self.name {
            for entry in fs::read_dir("/proc").map_err(SelectError::Proc)? {
                let Ok(entry) = entry else { continue };
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                if comm(pid).is_some_and(|c| re.is_match(&c)) {
                    pids.push(pid);
                }
            }
        }
        pids.sort_unstable();
        pids.dedup();
        pids.retain(|p| *p != self.own && alive(*p));
        // Oldest first, as the kernel's khugepaged meets processes (in the order they
        // first faulted anonymous memory, which start order approximates).
        pids.sort_by_key(|p| (start_ticks(*p).unwrap_or(u64::MAX), *p));
        Ok(pids
            .into_iter()
            .map(|p| Selected {
                pid: HostPid(p),
                comm: comm(p).unwrap_or_default(),
            })
            .collect())
    }
}

/// The fields of `/proc/PID/stat` after the parenthesised command name (which may itself
/// hold ')'): the state first.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// When `pid` started, in clock ticks after boot (`starttime`, field 22 of the stat file).
fn start_ticks(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// Whether `pid` is a live process: it exists and is neither a zombie (`Z`: exited, not
/// yet reaped by its parent; its memory is gone) nor dead (`X`).
pub fn alive(pid: u32) -> bool {
    let state = stat_fields(pid).and_then(|f| f.into_iter().next());
    !matches!(state.as_deref(), None | Some("Z" | "X" | "x"))
}

/// `/proc/PID/comm`, without its newline; `None` when the process is gone.
pub fn comm(pid: u32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_needs_something_to_select() {
        assert!(matches!(
            Selector::new(Vec::new(), None, None),
            Err(SelectError::Empty)
        ));
    }

    #[test]
    fn a_bad_pattern_and_a_missing_cgroup_are_named() {
        let e = Selector::new(Vec::new(), Some("(unclosed"), None).unwrap_err();
        assert!(e.to_string().contains("`(unclosed`"), "{e}");
        let e = Selector::new(Vec::new(), None, Some(Path::new("/nonexistent/cg"))).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/cg/cgroup.procs"),
            "{e}"
        );
    }

    #[test]
    fn the_agent_never_selects_itself_and_finds_a_child_by_name() {
        let own = HostPid(std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // Until it has exec'd, the child still bears this test binary's name.
        for _ in 0..200 {
            if comm(child.id()).as_deref() == Some("sleep") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let s = Selector::new(vec![own], Some("^sleep$"), None).unwrap();
        let found = s.select().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.iter().all(|t| t.pid != own));
        assert!(found
            .iter()
            .any(|t| t.pid.0 == child.id() && t.comm == "sleep"));
    }

    #[test]
    fn targets_are_listed_oldest_first() {
        let mut older = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut newer = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let s = Selector::new(vec![HostPid(newer.id()), HostPid(older.id())], None, None);
        let found = s.unwrap().select().unwrap();
        for c in [&mut older, &mut newer] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        let order: Vec<u32> = found.iter().map(|t| t.pid.0).collect();
        assert_eq!(order, [older.id(), newer.id()]);
    }

    #[test]
    fn a_zombie_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie until `wait`.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!alive(pid));
        child.wait().unwrap();
        assert!(!alive(pid));
        assert!(alive(std::process::id()));
    }
}
