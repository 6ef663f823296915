//! Stage two for `[guest]` and `[[vm]]`: the machine as a host of virtual machines
//! (`hugemm_sim::host`). `[guest]` is the machine's nested-paging hardware, as a profile's
//! `[guest]` table would give it; each `[[vm]]` is a VM of `memory` and `cores` vCPUs
//! that runs the file's processes it names (the rest run on the host). `host_advice` is
//! how the VMM advises the VM's memory in the host: "hugepage" (`MADV_HUGEPAGE`, what
//! QEMU does; the default) or "none". A VM may belong to a `layout`: a reproduction runs
//! each layout on its own (HawkEye's Table 6 has three).
//!
//! `[host]` turns on what a host does with its VMs' memory besides its kernel's work:
//! same-page merging of zero pages (`ksm_pages_per_s`), ballooning by free page reporting
//! (`free_page_reporting_ms`) and swap (`swap_latency_us`, `swap_mb_s`).

use super::raw::{RawHost, RawVm};
use super::validate::{Validator, R};
use hugemm_hw::{GuestProfile, MachineProfile, Nanos};
use hugemm_sim::{Experiment, FreePageReporting, GuestVm, HostSwap, HostedRun, Ksm};
use hugemm_workload::{Advice, ProcessSpec};

/// Most VMs one file may declare.
const MAX_VMS: usize = 64;

/// A validated `[[vm]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct VmSpec {
    /// Its name.
    pub name: String,
    /// The layout it belongs to (`None`: every run has it).
    pub layout: Option<String>,
    /// Guest-physical memory (bytes).
    pub memory: u64,
    /// vCPUs.
    pub cores: u32,
    /// The processes it runs: names of the file's processes (a name also stands for its
    /// `count` instances).
    pub processes: Vec<String>,
    /// How the VMM advises the VM's memory in the host.
    pub host_advice: Advice,
}

/// A validated `[host]`: each mechanism, if on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostSpec {
    /// Same-page merging of zero pages.
    pub ksm: Option<Ksm>,
    /// Ballooning by free page reporting.
    pub balloon: Option<FreePageReporting>,
    /// Swap of VM memory.
    pub swap: Option<HostSwap>,
}

impl HostSpec {
    /// `run` with this host's mechanisms.
    pub fn apply(&self, mut run: HostedRun) -> HostedRun {
        if let Some(k) = self.ksm {
            run = run.with_ksm(k);
        }
        if let Some(b) = self.balloon {
            run = run.with_free_page_reporting(b);
        }
        if let Some(s) = self.swap {
            run = run.with_swap(s);
        }
        run
    }
}

/// The host's experiment and one guest per VM of `run`, from `base`: each VM's guest
/// runs `base` on `guest_profile` with the VM's memory and vCPUs and the processes it
/// names; the host runs the processes no VM of `claimed` names (a process of a VM that is
/// not run is not run at all). Both run `base`'s policy until the caller sets theirs.
pub fn hosted(
    base: &Experiment,
    guest_profile: &MachineProfile,
    run: &[&VmSpec],
    claimed: &[VmSpec],
) -> (Experiment, Vec<GuestVm>) {
    let in_vm = |v: &VmSpec, name: &str| v.processes.iter().any(|e| member(name, e));
    let mut host = base.clone();
    host.processes
        .retain(|p| !claimed.iter().any(|v| in_vm(v, &p.name)));
    let guests = run
        .iter()
        .map(|v| {
            let mut g = base.clone();
            g.profile = guest_profile.clone();
            g.memory_bytes = v.memory;
            g.node_bytes.clear();
            // A guest's memory is not split into the host's zones.
            g.zone_bytes.clear();
            g.home_node = 0;
            g.tiering = None;
            g.cores = v.cores;
            g.daemon_core = 0;
            g.kernel.min_free_kbytes = None;
            g.processes.retain(|p| in_vm(v, &p.name));
            for p in &mut g.processes {
                p.core = None;
            }
            let mut vm = GuestVm::new(v.name.clone(), g);
            vm.advice = v.host_advice;
            vm
        })
        .collect();
    (host, guests)
}

/// Whether process `name` is entry `entry` or one of its numbered instances.
pub fn member(name: &str, entry: &str) -> bool {
    name == entry
        || name
            .strip_prefix(entry)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

impl Validator<'_> {
    /// `[guest]` and the `[[vm]]` tables: the guests' profile (the machine's with the
    /// `[guest]` table) and the VMs, checked against the file's processes.
    pub(super) fn vms(
        &self,
        guest: &Option<GuestProfile>,
        raw: &mut [RawVm],
        host: &MachineProfile,
        processes: &[ProcessSpec],
    ) -> R<(Option<MachineProfile>, Vec<VmSpec>)> {
        if host.guest.is_some() && (guest.is_some() || !raw.is_empty()) {
            return Err(self.bad(
                "machine.profile",
                format!(
                    "a bare-metal profile for a host of VMs; '{}' is itself a guest's",
                    host.name
                ),
            ));
        }
        let guest_profile = match guest {
            None if raw.is_empty() => return Ok((None, Vec::new())),
            None => {
                return Err(self.bad(
                    "guest",
                    "a [guest] table (the host's nested-paging hardware) for the [[vm]] tables",
                ))
            }
            Some(g) => {
                let mut p = host.clone();
                p.guest = Some(g.clone());
                p.name = format!("{}-guest", host.name);
                p.validate("the [guest] table")
                    .map_err(|e| self.bad("guest", e.to_string()))?;
                p
            }
        };
        if raw.len() > MAX_VMS {
            return Err(self.bad("vm", format!("at most {MAX_VMS} [[vm]] tables")));
        }
        let mut vms: Vec<VmSpec> = Vec::new();
        for (i, v) in raw.iter_mut().enumerate() {
            let key = |k: &str| format!("vm[{i}].{k}");
            let name = self.name(&key("name"), &v.name)?;
            let layout = v.layout.clone();
            if layout.as_deref().is_some_and(str::is_empty) {
                return Err(self.bad(&key("layout"), "a non-empty layout name"));
            }
            let memory = match &v.memory {
                Some(m) => self.size(&key("memory"), m)?,
                None => return Err(self.bad(&key("memory"), "the VM's memory, e.g. \"4GiB\"")),
            };
            if memory < 1 << 21 || memory % (1 << 21) != 0 {
                return Err(self.bad(
                    &key("memory"),
                    format!("a positive multiple of 2 MiB, found {memory} bytes"),
                ));
            }
            let cores = self.int(&key("cores"), v.cores, 1, 1, 1024)? as u32;
            let host_advice = self.choice(
                &key("host_advice"),
                v.host_advice.as_deref(),
                "hugepage",
                &[("hugepage", Advice::Hugepage), ("none", Advice::Default)],
            )?;
            v.host_advice = Some(
                match host_advice {
                    Advice::Hugepage => "hugepage",
                    _ => "none",
                }
                .into(),
            );
            v.cores = Some(i64::from(cores));
            let names = v.processes.clone().unwrap_or_default();
            if names.is_empty() {
                return Err(self.bad(
                    &key("processes"),
                    "a list of the processes the VM runs (names of the file's processes)",
                ));
            }
            for n in &names {
                if !processes.iter().any(|p| member(&p.name, n)) {
                    return Err(self.bad(
                        &key("processes"),
                        format!("names of processes in the file, found \"{n}\""),
                    ));
                }
            }
            // Within a layout (or across VMs of none), names and processes are each
            // VM's own.
            let same_run =
                |o: &VmSpec| o.layout.is_none() || layout.is_none() || o.layout == layout;
            if let Some(o) = vms.iter().find(|o| o.name == name && same_run(o)) {
                return Err(self.bad(
                    &key("name"),
                    format!(
                        "a name no other VM of its layout has; \"{}\" is taken",
                        o.name
                    ),
                ));
            }
            for n in &names {
                if let Some(o) = vms
                    .iter()
                    .find(|o| same_run(o) && o.processes.iter().any(|m| m == n))
                {
                    return Err(self.bad(
                        &key("processes"),
                        format!(
                            "processes no other VM of its layout runs; \"{n}\" runs in \"{}\"",
                            o.name
                        ),
                    ));
                }
            }
            vms.push(VmSpec {
                name,
                layout,
                memory,
                cores,
                processes: names,
                host_advice,
            });
        }
        Ok((Some(guest_profile), vms))
    }

    /// `[host]`, for a file with `[[vm]]` tables (`has_vms`) on a host of `host_bytes`.
    pub(super) fn host(
        &self,
        raw: &mut Option<RawHost>,
        has_vms: bool,
        host_bytes: u64,
    ) -> R<HostSpec> {
        let Some(h) = raw.as_mut() else {
            return Ok(HostSpec::default());
        };
        if !has_vms {
            return Err(self.bad("host", "no [host] table without [[vm]] tables"));
        }
        let ksm = match h.ksm_pages_per_s {
            None => None,
            Some(n) => Some(Ksm {
                pages_per_s: self.int("host.ksm_pages_per_s", Some(n), 0, 1, 1 << 30)? as u64,
            }),
        };
        let balloon = match h.free_page_reporting_ms {
            None => None,
            Some(p) => {
                let period = self.float("host.free_page_reporting_ms", Some(p), 0.0, 1.0, 3.6e6)?;
                Some(FreePageReporting {
                    period: Nanos((period * 1e6) as u64),
                })
            }
        };
        let swap = match (h.swap_latency_us, h.swap_mb_s) {
            (None, None) => None,
            (Some(lat), Some(mb)) => {
                let lat = self.float("host.swap_latency_us", Some(lat), 0.0, 0.0, 1e6)?;
                let mb = self.float("host.swap_mb_s", Some(mb), 0.0, 1.0, 1e6)?;
                Some(HostSwap {
                    latency: Nanos((lat * 1e3) as u64),
                    bytes_per_s: (mb * 1e6) as u64,
                    ..HostSwap::ssd(host_bytes)
                })
            }
            (None, Some(_)) => {
                return Err(self.bad(
                    "host.swap_latency_us",
                    "the swap device's latency (us), with swap_mb_s",
                ))
            }
            (Some(_), None) => {
                return Err(self.bad(
                    "host.swap_mb_s",
                    "the swap device's bandwidth (MB/s), with swap_latency_us",
                ))
            }
        };
        Ok(HostSpec { ksm, balloon, swap })
    }
}
