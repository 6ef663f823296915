//! Workloads that several reproductions of one `hugemm reproduce` start from, run once.
//!
//! APSys'16's Table 1, Table 2 and Figure 3 all begin with the same two kernel builds on
//! the same 4 GiB machine under the default fallback, and only then measure differently
//! (a snapshot, a compaction, renewed building). Before anything runs, `hugemm reproduce`
//! asks each reproduction which workloads it will run to completion ([`requests`]) and
//! counts them by experiment. A workload asked for more than once is run by whichever
//! reproduction reaches it first; the others get a fork of the finished run
//! ([`Engine::fork`]), which continues exactly as the run itself would, so every report is
//! byte-identical to one made alone. A reproduction that reaches a workload while another
//! is still running it helps with other pending work on the thread pool meanwhile
//! (`rayon::yield_now`), so no core idles. The first keeps its run and leaves a copy; the
//! last to take the workload takes that copy itself, and its memory goes with it.
//! [`requests`] must list what each kind passes to [`run_workload`]: a workload it omits
//! is only run once per asker, as before; one it lists but never asks for keeps its copy
//! in memory until the command ends.
//!
//! Two experiments are the same workload when their `Debug` forms are equal: every
//! field, profile and process included, so equal forms run identically.

use super::{engine, Progress, Reproduction};
use hugemm_sim::{Detached, Engine, Experiment};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The workloads of one `hugemm reproduce` wanted by more than one reproduction.
#[derive(Default)]
pub struct SharedRuns {
    slots: HashMap<String, Mutex<Slot>>,
}

struct Slot {
    /// Reproductions yet to take the workload.
    wanted: usize,
    state: State,
}

enum State {
    Pending,
    Running,
    /// Finished: a copy for the next taker.
    Done(Box<Detached>),
    Failed(String),
}

/// The workloads `r` runs to completion before measuring, each an experiment given to
/// [`run_workload`] (empty for kinds that do not share theirs).
pub fn requests(r: &Reproduction) -> Vec<Experiment> {
    let variants: &[String] = match r.kind.as_str() {
        "apsys16-table1" => &r.variants[..r.variants.len().min(1)],
        "apsys16-table2" | "apsys16-fig3" => &r.variants,
        // Under load, the builds are cut short: nothing to share.
        "apsys16-highalloc" if !r.highalloc.under_load => &r.variants,
        _ => &[],
    };
    variants.iter().map(|v| super::variant(r, v)).collect()
}

fn key(exp: &Experiment) -> String {
    format!("{exp:?}")
}

impl std::fmt::Debug for SharedRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedRuns({} workloads)", self.slots.len())
    }
}

impl SharedRuns {
    /// The workloads of `reproductions` that more than one asks for.
    pub fn plan<'a>(reproductions: impl IntoIterator<Item = &'a Reproduction>) -> SharedRuns {
        let mut wanted: HashMap<String, usize> = HashMap::new();
        for r in reproductions {
            for exp in requests(r) {
                *wanted.entry(key(&exp)).or_default() += 1;
            }
        }
        SharedRuns {
            slots: wanted
                .into_iter()
                .filter(|&(_, n)| n > 1)
                .map(|(k, wanted)| {
                    let state = State::Pending;
                    (k, Mutex::new(Slot { wanted, state }))
                })
                .collect(),
        }
    }

    /// Workloads shared by more than one reproduction.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no workload is shared.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Run `exp`'s processes (the run of `what`, followed by `progress`) to completion and
/// hand back the engine for more; a workload [`SharedRuns`] holds is run once.
pub(crate) fn run_workload(
    r: &Reproduction,
    progress: Progress<'_>,
    what: &str,
    exp: Experiment,
) -> anyhow::Result<Engine> {
    // The key is the whole experiment's `Debug` form: only made when something is shared.
    let slot = (!r.shared.is_empty())
        .then(|| r.shared.slots.get(&key(&exp)))
        .flatten();
    let Some(slot) = slot else {
        return alone(progress, what, exp);
    };
    let taken = |why: &str| State::Failed(why.into());
    loop {
        let mut s = slot.lock().expect("a shared run's lock");
        match std::mem::replace(&mut s.state, State::Running) {
            State::Pending => {
                drop(s);
                let run = alone(progress, what, exp);
                let mut s = slot.lock().expect("a shared run's lock");
                s.wanted -= 1;
                s.state = match &run {
                    Ok(engine) if s.wanted > 0 => match engine.fork() {
                        Some(copy) => State::Done(Box::new(copy)),
                        None => taken("this run cannot be forked"),
                    },
                    Ok(_) => taken("taken by every reproduction"),
                    Err(e) => State::Failed(format!("{e:#}")),
                };
                return run;
            }
            State::Done(copy) => {
                s.wanted -= 1;
                let mine = if s.wanted == 0 {
                    s.state = taken("taken by every reproduction");
                    *copy
                } else {
                    let mine = (*copy).clone();
                    s.state = State::Done(copy);
                    mine
                };
                drop(s);
                let mut engine = Engine::attach(mine);
                if let Some(watcher) = progress.start(what) {
                    engine.watch_samples(watcher);
                }
                return Ok(engine);
            }
            State::Failed(e) => {
                s.state = State::Failed(e.clone());
                anyhow::bail!("the run {what} shares failed: {e}")
            }
            State::Running => {
                drop(s);
                // Run other pending work meanwhile; sleep briefly when there is none.
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
        }
    }
}

fn alone(progress: Progress<'_>, what: &str, exp: Experiment) -> anyhow::Result<Engine> {
    let mut engine = engine(progress, what, exp)?;
    engine.run_until_idle()?;
    Ok(engine)
}

/// A handle every reproduction of one run holds.
pub type Shared = Arc<SharedRuns>;
