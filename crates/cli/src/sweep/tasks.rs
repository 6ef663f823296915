//! `hugemm sweep FILE --emit-tasks DIR`: the sweep as one self-contained task per point,
//! for a cluster scheduler to run, instead of running it here.
//!
//! DIR gets `tasks/<id>.toml` (the point's resolved configuration: any `hugemm run` runs
//! it, on any machine), `tasks/<id>.json` (its `point.json`), `run-task.sh N` (runs task
//! N into the sweep's points directory as the sweep itself would: a temporary directory
//! renamed into place when complete), `sweep.sbatch` (a Slurm job array over
//! `run-task.sh`), `tasks.json` (the manifest) and `logs/`. Running the same `hugemm
//! sweep` command afterwards finds every point done and writes the tables. DIR itself
//! is written into a temporary sibling and renamed, so it is never half there.

use super::Sweep;
use crate::config::ConfigError;
use crate::provenance::Provenance;
use crate::report;
use anyhow::Context;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `tasks.json`.
#[derive(Serialize)]
struct Manifest<'a> {
    provenance: &'a Provenance,
    /// The sweep file.
    sweep: String,
    /// The sweep's output directory, whose `points/` the tasks write.
    out: String,
    /// The command that gathers the tasks' results into the tables.
    gather: String,
    /// The hugemm binary the scripts run (unless `HUGEMM` says another).
    hugemm: String,
    /// The tasks, in grid order; task N is `run-task.sh N`.
    tasks: Vec<Task<'a>>,
}

#[derive(Serialize)]
struct Task<'a> {
    index: usize,
    id: &'a str,
    /// The experiment file, relative to the tasks directory.
    file: String,
    /// The swept values, `key=value`.
    parameters: String,
}

/// The absolute paths the scripts and the manifest name.
struct Paths {
    /// The tasks directory, as it will be named once complete.
    dir: PathBuf,
    /// The sweep's output directory.
    out: PathBuf,
    /// The sweep file.
    file: PathBuf,
    /// This hugemm binary.
    hugemm: PathBuf,
}

/// Writes the tasks of `sweep` (whose results go to `out`) into the new directory
/// `dir`; returns the report for stdout.
pub fn emit(
    sweep: &Sweep,
    dir: &Path,
    out: &Path,
    provenance: &Provenance,
) -> anyhow::Result<String> {
    if dir.exists() && !is_empty_dir(dir) {
        return Err(ConfigError::Path {
            path: dir.display().to_string(),
            problem: "exists and is not an empty directory: --emit-tasks writes a new one \
                      (remove it, or name another)"
                .into(),
        }
        .into());
    }
    let absolute = |p: &Path| std::path::absolute(p).context("finding the current directory");
    let paths = Paths {
        dir: absolute(dir)?,
        out: absolute(out)?,
        file: absolute(Path::new(&sweep.file))?,
        hugemm: std::env::current_exe().context("finding the hugemm binary")?,
    };
    let gather = gather_command(sweep, &paths)?;
    let name = paths.dir.file_name().unwrap_or_default().to_string_lossy();
    let temp = paths
        .dir
        .with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = write_tasks(sweep, &temp, &paths, &gather, provenance).and_then(|()| {
        if paths.dir.exists() {
            std::fs::remove_dir(&paths.dir)?;
        }
        Ok(std::fs::rename(&temp, &paths.dir)?)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(e).with_context(|| format!("writing the tasks into {}", dir.display()));
    }
    let n = sweep.points.len();
    Ok(format!(
        "wrote {n} tasks (one per point) to {dir}\n\
         run them with Slurm:  sbatch {dir}/sweep.sbatch\n\
         or one by one:        {dir}/run-task.sh N   (N from 0 to {last})\n\
         then gather them:     {gather}\n",
        dir = paths.dir.display(),
        last = n - 1
    ))
}

/// Writes every file of the tasks directory into `temp`.
fn write_tasks(
    sweep: &Sweep,
    temp: &Path,
    paths: &Paths,
    gather: &str,
    provenance: &Provenance,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(temp.join("tasks"))?;
    std::fs::create_dir_all(temp.join("logs"))?;
    let mut tasks = Vec::new();
    for p in &sweep.points {
        let toml = report::resolved_toml(&p.resolved, provenance)?;
        std::fs::write(temp.join(format!("tasks/{}.toml", p.id)), toml)?;
        std::fs::write(
            temp.join(format!("tasks/{}.json", p.id)),
            sweep.point_json(p)?,
        )?;
        tasks.push(Task {
            index: p.index,
            id: &p.id,
            file: format!("tasks/{}.toml", p.id),
            parameters: sweep.describe(p.index),
        });
    }
    let run_task = run_task_script(sweep, &paths.hugemm, &paths.out.join("points"))?;
    write_executable(&temp.join("run-task.sh"), &run_task)?;
    write_executable(
        &temp.join("sweep.sbatch"),
        &sbatch_script(sweep, &paths.dir, gather)?,
    )?;
    let manifest = Manifest {
        provenance,
        sweep: utf8(&paths.file)?.into(),
        out: utf8(&paths.out)?.into(),
        gather: gather.into(),
        hugemm: utf8(&paths.hugemm)?.into(),
        tasks,
    };
    let json = serde_json::to_string_pretty(&manifest)? + "\n";
    std::fs::write(temp.join("tasks.json"), json)?;
    Ok(())
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

/// `path` as UTF-8, for a script.
fn utf8(path: &Path) -> anyhow::Result<&str> {
    path.to_str().with_context(|| {
        format!(
            "{} is not UTF-8, which the task scripts need",
            path.display()
        )
    })
}

/// `s` quoted for a POSIX shell.
fn quote(s: &str) -> anyhow::Result<String> {
    Ok(shlex::try_quote(s)
        .with_context(|| format!("{s:?} cannot be quoted for a shell"))?
        .into_owned())
}

/// The command that writes the tables once every task has run.
fn gather_command(sweep: &Sweep, paths: &Paths) -> anyhow::Result<String> {
    let mut words = vec![
        quote(utf8(&paths.hugemm)?)?,
        "sweep".into(),
        quote(utf8(&paths.file)?)?,
    ];
    for o in &sweep.set {
        words.push("--set".into());
        words.push(quote(&o.to_string())?);
    }
    words.push("--out".into());
    words.push(quote(utf8(&paths.out)?)?);
    Ok(words.join(" "))
}

/// `run-task.sh N`: runs task N into `points` as the sweep would.
fn run_task_script(sweep: &Sweep, hugemm: &Path, points: &Path) -> anyhow::Result<String> {
    let n = sweep.points.len();
    let mut cases = String::new();
    for p in &sweep.points {
        let _ = writeln!(cases, "  {}) id={} ;;", p.index, p.id);
    }
    Ok(format!(
        r#"#!/bin/sh
# Task N (0 to {last}) of the sweep {file}: runs tasks/<id>.toml with `hugemm run` into a
# temporary directory beside the sweep's points and renames it into place when it is
# complete, as `hugemm sweep` itself does. A task already done is skipped.
# Environment: HUGEMM (the binary), HUGEMM_SWEEP_POINTS (the points directory).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
hugemm=${{HUGEMM:-{hugemm}}}
points=${{HUGEMM_SWEEP_POINTS:-{points}}}
case "${{1:-}}" in
{cases}  *) echo "usage: $0 N, a task from 0 to {last}" >&2; exit 2 ;;
esac
if [ -e "$points/$id" ]; then
  echo "task $1: $points/$id is done already"
  exit 0
fi
mkdir -p "$points"
tmp="$points/.tmp-$id-task-$(hostname)-$$"
rm -rf "$tmp"
"$hugemm" run "$here/tasks/$id.toml" --out "$tmp"
cp "$here/tasks/$id.json" "$tmp/point.json"
mv "$tmp" "$points/$id"
echo "task $1: $points/$id"
"#,
        last = n - 1,
        file = sweep.file.replace('\n', " "),
        hugemm = quote(utf8(hugemm)?)?,
        points = quote(utf8(points)?)?,
    ))
}

/// `sweep.sbatch`: a Slurm job array with one array task per point.
fn sbatch_script(sweep: &Sweep, dir: &Path, gather: &str) -> anyhow::Result<String> {
    let stem = Path::new(&sweep.file)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_',
            "_",
        );
    let logs: PathBuf = dir.join("logs");
    Ok(format!(
        r#"#!/bin/bash
# The sweep {file} as a Slurm job array, one array task per point:
#   sbatch {sbatch}
# and, once every task has ended, the results table and plot:
#   {gather}
# Add the --time, --mem, --partition or --account lines your cluster wants; a point needs
# one core, and memory for the modelled machine's frame metadata (16 bytes per 4 KiB of
# machine.memory) plus its page tables. Slurm caps array sizes (MaxArraySize, often
# 1001): submit a longer sweep in slices, e.g. sbatch --array=1000-1999 ...
#SBATCH --job-name=hugemm-{stem}
#SBATCH --array=0-{last}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --output={logs}/%A_%a.out
exec {run_task} "$SLURM_ARRAY_TASK_ID"
"#,
        file = sweep.file.replace('\n', " "),
        sbatch = quote(utf8(&dir.join("sweep.sbatch"))?)?,
        last = sweep.points.len() - 1,
        logs = utf8(&logs)?,
        run_task = quote(utf8(&dir.join("run-task.sh"))?)?,
    ))
}

/// Writes a script, executable where files have modes.
fn write_executable(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}
