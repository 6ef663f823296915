//! `/proc/PID/smaps` (and the header lines alone, `/proc/PID/maps`): a process's VMAs with
//! their page counters and `VmFlags` (`fs/proc/task_mmu.c`). Reading another process's
//! file needs ptrace-read access to it.
//!
//! ```text
//! 7f625ee00000-7f6260e00000 rw-p 00000000 00:00 0
//! Size:              32768 kB
//! Rss:               10240 kB
//! Anonymous:         10240 kB
//! AnonHugePages:     10240 kB
//! ...
//! VmFlags: rd wr mr mw me ac hg
//! ```
//!
//! Every VMA must carry `Size` (equal to its length), `Rss`, `Anonymous`, `AnonHugePages`
//! and `VmFlags`; other counters are checked for form (`Name: N [kB]`) and otherwise
//! ignored, so a newer kernel's new counters do not break the agent. This module also says
//! which VMAs `MADV_COLLAPSE` could act on ([`Smaps::eligible_ranges`]); it must not read
//! pagemap or decide anything.

use super::text::{self, lines, read_text, Line};
use crate::error::Result;
use crate::units::{Bytes, HostPid, HugeRange};
use hugemm_hw::{Geometry, VirtAddr};
use serde::Serialize;
use std::path::Path;

/// Access permissions and sharing of a VMA (`rw-p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Perms {
    /// `r`.
    pub read: bool,
    /// `w`.
    pub write: bool,
    /// `x`.
    pub exec: bool,
    /// `s` (shared) rather than `p` (private, copy-on-write).
    pub shared: bool,
}

/// The device of a file mapping (`fe:00`; `00:00` for anonymous memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Device {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

/// What backs a VMA, from its pathname column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Pathname {
    /// No name: anonymous memory.
    Anonymous,
    /// `[heap]`: the brk area (anonymous).
    Heap,
    /// `[stack]`: the main thread's stack (anonymous).
    Stack,
    /// `[anon:NAME]`: anonymous memory named with `PR_SET_VMA_ANON_NAME`.
    NamedAnon(String),
    /// A file; `deleted` when the kernel appended ` (deleted)`.
    File {
        /// The path as printed (octal escapes such as `\012` left as they are).
        path: String,
        /// The file has been unlinked.
        deleted: bool,
    },
    /// Anything else: `[vdso]`, `[vvar]`, `[anon_shmem:NAME]`, `anon_inode:...`.
    Special(String),
}

impl Pathname {
    fn parse(name: &str) -> Pathname {
        match name {
            "" => return Pathname::Anonymous,
            "[heap]" => return Pathname::Heap,
            "[stack]" => return Pathname::Stack,
            _ => {}
        }
        if let Some(n) = name
            .strip_prefix("[anon:")
            .and_then(|n| n.strip_suffix(']'))
        {
            return Pathname::NamedAnon(n.to_string());
        }
        if name.starts_with('/') {
            let (path, deleted) = match name.strip_suffix(" (deleted)") {
                Some(p) => (p, true),
                None => (name, false),
            };
            return Pathname::File {
                path: path.to_string(),
                deleted,
            };
        }
        Pathname::Special(name.to_string())
    }

    /// Private anonymous memory of some kind (no name, heap, stack, named).
    pub fn is_anonymous(&self) -> bool {
        matches!(
            self,
            Pathname::Anonymous | Pathname::Heap | Pathname::Stack | Pathname::NamedAnon(_)
        )
    }
}

/// One header line: what `/proc/PID/maps` shows of a VMA.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Mapping {
    /// First address.
    pub start: VirtAddr,
    /// One past the last address.
    pub end: VirtAddr,
    /// Permissions and sharing.
    pub perms: Perms,
    /// Offset into the file (0 for anonymous memory).
    pub offset: u64,
    /// Device of the file.
    pub device: Device,
    /// Inode of the file (0 for anonymous memory).
    pub inode: u64,
    /// What backs the VMA.
    pub pathname: Pathname,
}

/// The two-letter `VmFlags` mnemonics of a VMA (`rd wr mr mw me ac hg`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct VmFlags(Vec<String>);

impl VmFlags {
    /// Whether the mnemonic `code` is set.
    pub fn has(&self, code: &str) -> bool {
        self.0.iter().any(|c| c == code)
    }

    /// The mnemonics in file order.
    pub fn codes(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// `hg`: `MADV_HUGEPAGE` (`VM_HUGEPAGE`).
    pub fn hugepage(&self) -> bool {
        self.has("hg")
    }

    /// `nh`: `MADV_NOHUGEPAGE` (`VM_NOHUGEPAGE`).
    pub fn nohugepage(&self) -> bool {
        self.has("nh")
    }
}

/// Flags that rule out a transparent huge page whatever the advice: `ht` hugetlb, and the
/// kernel's `VM_SPECIAL` (`io`, `de` don't-expand, `pf` pure PFN, `mm` mixed map).
const NEVER_THP: [&str; 5] = ["ht", "io", "de", "pf", "mm"];

/// One VMA of smaps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vma {
    /// The header line.
    pub mapping: Mapping,
    /// `Rss`: resident memory (the shared zero page is not counted).
    pub rss: Bytes,
    /// `Anonymous`: resident anonymous memory.
    pub anonymous: Bytes,
    /// `AnonHugePages`: anonymous memory mapped by PMD-level (2 MB) huge pages.
    pub anon_huge_pages: Bytes,
    /// `THPeligible`: whether a fault could allocate a huge page now, under the current
    /// sysfs THP mode (absent before Linux 5.0). `MADV_COLLAPSE` ignores the mode, so this
    /// is not what [`Vma::is_collapse_candidate`] asks.
    pub thp_eligible: Option<bool>,
    /// `VmFlags`.
    pub flags: VmFlags,
}

impl Vma {
    /// Whether `MADV_COLLAPSE` could act on this VMA: private, writable anonymous memory
    /// without `nh` and without a flag that rules huge pages out (`ht`, `io`, `de`, `pf`,
    /// `mm`). Not visible here, and so not checked: a process-wide `PR_SET_THP_DISABLE`
    /// and a VMA never faulted (no `anon_vma`), where collapse fails.
    pub fn is_collapse_candidate(&self) -> bool {
        let m = &self.mapping;
        m.pathname.is_anonymous()
            && m.inode == 0
            && m.perms.write
            && !m.perms.shared
            && !self.flags.nohugepage()
            && !NEVER_THP.iter().any(|c| self.flags.has(c))
    }

    /// The huge-page-aligned part of the VMA, if it holds a whole region.
    pub fn huge_range(&self, geometry: &Geometry) -> Option<HugeRange> {
        HugeRange::inside(self.mapping.start, self.mapping.end, geometry)
    }
}

/// The aligned part of a collapse-candidate VMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EligibleRange<'a> {
    /// The VMA.
    pub vma: &'a Vma,
    /// Its aligned part.
    pub range: HugeRange,
}

/// A process's smaps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Smaps {
    /// The VMAs in address order.
    pub vmas: Vec<Vma>,
}

impl Smaps {
    /// Read and parse `/proc/PID/smaps`.
    pub fn read(pid: HostPid) -> Result<Smaps> {
        Smaps::read_path(&pid.proc_dir().join("smaps"))
    }

    /// Read and parse `path`.
    pub fn read_path(path: &Path) -> Result<Smaps> {
        Smaps::parse(path, &read_text(path)?)
    }

    /// Parse `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Smaps> {
        let mut vmas = Vec::new();
        let mut open: Option<VmaBuilder<'_>> = None;
        for line in lines(path, text) {
            let first = line.text.split_whitespace().next().unwrap_or("");
            if first.ends_with(':') {
                let Some(b) = open.as_mut() else {
                    return Err(line.error("a VMA header line first", line.text));
                };
                b.field(&line)?;
            } else {
                let mapping = parse_mapping(&line)?;
                if let Some(b) = open.take() {
                    vmas.push(b.finish()?);
                }
                open = Some(VmaBuilder::new(line, mapping));
            }
        }
        match open {
            Some(b) => vmas.push(b.finish()?),
            None => return Err(text::early_end(path, text, "a VMA header line")),
        }
        Ok(Smaps { vmas })
    }

    /// The aligned parts of the VMAs `MADV_COLLAPSE` could act on, in address order.
    pub fn eligible_ranges(&self, geometry: Geometry) -> impl Iterator<Item = EligibleRange<'_>> {
        self.vmas
            .iter()
            .filter(|v| v.is_collapse_candidate())
            .filter_map(move |vma| {
                let range = vma.huge_range(&geometry)?;
                Some(EligibleRange { vma, range })
            })
    }

    /// The VMA holding `addr`.
    pub fn vma_at(&self, addr: VirtAddr) -> Option<&Vma> {
        self.vmas
            .iter()
            .find(|v| v.mapping.start <= addr && addr < v.mapping.end)
    }
}

/// Parse the lines of `/proc/PID/maps` (`text`, read from `path`).
pub fn parse_maps(path: &Path, text: &str) -> Result<Vec<Mapping>> {
    lines(path, text).map(|line| parse_mapping(&line)).collect()
}

/// The counters and flags of one VMA being read.
struct VmaBuilder<'a> {
    header: Line<'a>,
    mapping: Mapping,
    size: Option<Bytes>,
    rss: Option<Bytes>,
    anonymous: Option<Bytes>,
    anon_huge_pages: Option<Bytes>,
    thp_eligible: Option<bool>,
    flags: Option<VmFlags>,
}

impl<'a> VmaBuilder<'a> {
    fn new(header: Line<'a>, mapping: Mapping) -> VmaBuilder<'a> {
        VmaBuilder {
            header,
            mapping,
            size: None,
            rss: None,
            anonymous: None,
            anon_huge_pages: None,
            thp_eligible: None,
            flags: None,
        }
    }

    /// Take in a `Name: value` line.
    fn field(&mut self, line: &Line<'_>) -> Result<()> {
        let (key, value) = line.text.split_once(':').unwrap_or((line.text, ""));
        let value = value.trim();
        let slot = match key {
            "VmFlags" => return set_once(line, &mut self.flags, vm_flags(line, value)?),
            "THPeligible" => {
                let eligible = match value {
                    "0" => false,
                    "1" => true,
                    _ => return Err(line.error("`THPeligible:` 0 or 1", line.text)),
                };
                return set_once(line, &mut self.thp_eligible, eligible);
            }
            "Size" => &mut self.size,
            "Rss" => &mut self.rss,
            "Anonymous" => &mut self.anonymous,
            "AnonHugePages" => &mut self.anon_huge_pages,
            _ => return other_field(line, key, value),
        };
        let kib = value
            .strip_suffix(" kB")
            .ok_or_else(|| line.error(format!("`{key}:` N kB"), line.text))?;
        set_once(
            line,
            slot,
            Bytes::from_kib(line.parse(kib.trim(), "a number of kB")?),
        )
    }

    /// The VMA, once every required field was read.
    fn finish(self) -> Result<Vma> {
        let h = &self.header;
        let missing = |name: &str| h.error(format!("a `{name}:` line in this VMA's block"), h.text);
        let size = self.size.ok_or_else(|| missing("Size"))?;
        let length = self.mapping.end.0 - self.mapping.start.0;
        if size != Bytes(length) {
            return Err(h.error(
                format!("`Size:` of {} kB, the VMA's length", length / 1024),
                h.text,
            ));
        }
        Ok(Vma {
            rss: self.rss.ok_or_else(|| missing("Rss"))?,
            anonymous: self.anonymous.ok_or_else(|| missing("Anonymous"))?,
            anon_huge_pages: self
                .anon_huge_pages
                .ok_or_else(|| missing("AnonHugePages"))?,
            thp_eligible: self.thp_eligible,
            flags: self.flags.ok_or_else(|| missing("VmFlags"))?,
            mapping: self.mapping,
        })
    }
}

fn set_once<T>(line: &Line<'_>, slot: &mut Option<T>, value: T) -> Result<()> {
    if slot.is_some() {
        return Err(line.error("each field once per VMA", line.text));
    }
    *slot = Some(value);
    Ok(())
}

/// A field this parser does not keep: still `Name: N` or `Name: N kB`.
fn other_field(line: &Line<'_>, key: &str, value: &str) -> Result<()> {
    let number = value.strip_suffix(" kB").unwrap_or(value).trim();
    let key_ok = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !key_ok || number.parse::<u64>().is_err() {
        return Err(line.error("`Name: N kB` or `Name: N`", line.text));
    }
    Ok(())
}

/// Two-character mnemonics (`??` for a flag the kernel has no name for).
fn vm_flags(line: &Line<'_>, value: &str) -> Result<VmFlags> {
    value
        .split_whitespace()
        .map(|code| {
            let ok = code.len() == 2 && code.bytes().all(|b| b.is_ascii_graphic());
            ok.then(|| code.to_string())
                .ok_or_else(|| line.error("two-letter VmFlags", code))
        })
        .collect::<Result<Vec<_>>>()
        .map(VmFlags)
}

/// `start-end perms offset major:minor inode [pathname]`.
fn parse_mapping(line: &Line<'_>) -> Result<Mapping> {
    let mut fields = line.text.splitn(6, ' ');
    let range = line.next(&mut fields, "`start-end`")?;
    let (start, end) = range
        .split_once('-')
        .ok_or_else(|| line.error("`start-end` in hex", range))?;
    let start = VirtAddr(hex(line, start, "a hex start address")?);
    let end = VirtAddr(hex(line, end, "a hex end address")?);
    if start >= end {
        return Err(line.error("a start below the end", range));
    }
    let perms = perms(line, line.next(&mut fields, "permissions `rwxp`")?)?;
    let offset = hex(
        line,
        line.next(&mut fields, "a hex file offset")?,
        "a hex file offset",
    )?;
    let device = device(line, line.next(&mut fields, "a device `MM:mm`")?)?;
    let inode = line.parse(
        line.next(&mut fields, "an inode number")?,
        "an inode number",
    )?;
    let pathname = Pathname::parse(fields.next().unwrap_or("").trim_start());
    Ok(Mapping {
        start,
        end,
        perms,
        offset,
        device,
        inode,
        pathname,
    })
}

fn hex(line: &Line<'_>, token: &str, expected: &str) -> Result<u64> {
    u64::from_str_radix(token, 16).map_err(|_| line.error(expected, token))
}

fn perms(line: &Line<'_>, token: &str) -> Result<Perms> {
    let b = token.as_bytes();
    let flag = |i: usize, set: u8| match b.get(i) {
        Some(&c) if c == set => Ok(true),
        Some(b'-') => Ok(false),
        _ => Err(line.error("permissions such as `rw-p`", token)),
    };
    let shared = match b.get(3) {
        Some(b's') => true,
        Some(b'p') => false,
        _ => return Err(line.error("permissions ending in `p` or `s`", token)),
    };
    if b.len() != 4 {
        return Err(line.error("four permission characters", token));
    }
    Ok(Perms {
        read: flag(0, b'r')?,
        write: flag(1, b'w')?,
        exec: flag(2, b'x')?,
        shared,
    })
}

fn device(line: &Line<'_>, token: &str) -> Result<Device> {
    let (major, minor) = token
        .split_once(':')
        .ok_or_else(|| line.error("a device `MM:mm` in hex", token))?;
    let number =
        |t: &str| u32::from_str_radix(t, 16).map_err(|_| line.error("a hex device number", token));
    Ok(Device {
        major: number(major)?,
        minor: number(minor)?,
    })
}
