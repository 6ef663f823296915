//! Records the git commit hugemm is built from (`HUGEMM_GIT_COMMIT`, read by
//! `src/provenance.rs`). Outside a git checkout, or without git, nothing is recorded and
//! outputs say the commit is unknown. A packager may set `HUGEMM_GIT_COMMIT` itself.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=HUGEMM_GIT_COMMIT");
    if std::env::var_os("HUGEMM_GIT_COMMIT").is_some() {
        return;
    }
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let Some(commit) = git(&dir, &["rev-parse", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=HUGEMM_GIT_COMMIT={commit}");
    // Build again when HEAD moves: HEAD itself (a checkout), the branch it names (a
    // commit), and packed refs.
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            dir.join(p)
        }
    };
    if let Some(git_dir) = git(&dir, &["rev-parse", "--git-dir"]).map(abs) {
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    }
    if let Some(common) = git(&dir, &["rev-parse", "--git-common-dir"]).map(abs) {
        if let Some(head_ref) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(head_ref).display());
        }
        // (Only paths that exist: cargo reruns a script whose watched path is missing.)
        let packed = common.join("packed-refs");
        if packed.exists() {
            println!("cargo:rerun-if-changed={}", packed.display());
        }
    }
}
