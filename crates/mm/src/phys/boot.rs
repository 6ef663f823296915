//! Kernel memory a booted kernel already holds (`[kernel.boot]` in experiment files).
//!
//! A kernel that has just booted owns pageblocks: memory its early allocations took
//! (per-CPU areas, hash tables, the first slab caches, page tables), typed Unmovable or
//! Reclaimable, mostly full, with free pieces left where boot-time allocations were
//! freed again. Later kernel allocations fill those pieces before they fall back into
//! Movable pageblocks, so how many there are decides when the fallbacks start. The model
//! otherwise boots with every pageblock Movable and free.
//!
//! [`PhysMem::boot_kernel_memory`] recreates a measured state from what
//! `/proc/pagetypeinfo` shows: how many pageblocks of each kernel type, and how many
//! free blocks of each order their free lists hold. It takes that many whole free
//! pageblocks from the end of memory the boot order allocates first (the highest
//! addresses for Linux before 5.10), gives every frame to the kernel, types the
//! pageblocks, and frees the listed blocks inside them. `pagetypeinfo` does not say
//! where in its pageblocks a free block lies; the model places them largest first,
//! spread over the pageblocks in turn (round robin, first pageblock first), each at the
//! top of what is left of its pageblock below a gap of its own size, so that no two
//! merge and each stays on the list of the order measured. A free block of whole
//! pageblocks (order 9 or 10 on x86-64) goes to an aligned run of untouched pageblocks
//! whose buddy run the kernel keeps a frame of (none is needed at the largest order).

use super::buddy::PhysMem;
use super::frame::OwnerKind;
use super::pageblock::MigrateType;
use crate::error::{MmError, Result};
use hugemm_hw::{Order, Pfn};
use serde::Serialize;

/// Kernel pageblocks of one migrate type at boot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BootPageblocks {
    /// How many pageblocks.
    pub pageblocks: u32,
    /// Free blocks left in them, by order (index = order, up to the largest order).
    pub free: Vec<u64>,
}

/// What a booted kernel holds ([`PhysMem::boot_kernel_memory`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BootKernelMemory {
    /// Unmovable pageblocks and their free blocks.
    pub unmovable: BootPageblocks,
    /// Reclaimable pageblocks and their free blocks.
    pub reclaimable: BootPageblocks,
}

impl BootKernelMemory {
    /// Nothing held: every pageblock Movable and free (the model's boot without it).
    pub fn is_empty(&self) -> bool {
        self.unmovable.pageblocks == 0 && self.reclaimable.pageblocks == 0
    }
}

impl PhysMem {
    /// Give the kernel what `boot` describes (see the module doc); `highest_first`: take
    /// the pageblocks from the highest addresses down (the boot order of Linux before
    /// 5.10), else from the lowest up. Must run before anything is allocated; an error
    /// names what does not fit.
    pub fn boot_kernel_memory(
        &mut self,
        boot: &BootKernelMemory,
        highest_first: bool,
    ) -> Result<()> {
        if self.frames_free() != self.frames_total() {
            return Err(MmError::InvalidConfig {
                what: "kernel.boot: boot kernel memory must be set up before any allocation",
            });
        }
        for (spec, mt, owner) in [
            (
                &boot.unmovable,
                MigrateType::Unmovable,
                OwnerKind::KernelUnmovable,
            ),
            (
                &boot.reclaimable,
                MigrateType::Reclaimable,
                OwnerKind::KernelReclaimable,
            ),
        ] {
            if spec.free.len() > self.max_order().0 as usize + 1 {
                return Err(MmError::InvalidConfig {
                    what: "kernel.boot: free blocks are listed by order up to the largest order",
                });
            }
            if spec.pageblocks == 0 {
                if spec.free.iter().any(|&n| n > 0) {
                    return Err(MmError::InvalidConfig {
                        what: "kernel.boot: free blocks listed for a type with no pageblocks",
                    });
                }
                continue;
            }
            let blocks = self.boot_pageblocks(spec.pageblocks, highest_first)?;
            for &start in &blocks {
                self.boot_take_pageblock(start, owner)?;
                self.blocks.set(start, mt);
            }
            self.boot_free(&blocks, &spec.free)?;
        }
        Ok(())
    }

    /// The first `n` Movable pageblocks the boot order reaches, every frame free.
    fn boot_pageblocks(&self, n: u32, highest_first: bool) -> Result<Vec<u32>> {
        let pb = 1u32 << self.pageblock_order().0;
        let count = (self.frames_total() / u64::from(pb)) as u32;
        let starts: Box<dyn Iterator<Item = u32>> = match highest_first {
            true => Box::new((0..count).rev().map(|i| i * pb)),
            false => Box::new((0..count).map(|i| i * pb)),
        };
        let chosen: Vec<u32> = starts
            .filter(|&s| {
                self.blocks.type_of(s) == MigrateType::Movable && self.boot_pageblock_free(s, pb)
            })
            .take(n as usize)
            .collect();
        if chosen.len() < n as usize {
            return Err(MmError::InvalidConfig {
                what: "kernel.boot: more kernel pageblocks than free Movable pageblocks",
            });
        }
        Ok(chosen)
    }

    /// Every frame of the pageblock at `start` is free.
    fn boot_pageblock_free(&self, start: u32, pb: u32) -> bool {
        let mut pfn = start;
        while pfn < start + pb {
            match self.free_head_of(pfn) {
                Some((head, order)) => pfn = head + (1 << order),
                None => return false,
            }
        }
        true
    }

    /// The free block holding frame `pfn`, as its head and order.
    fn free_head_of(&self, pfn: u32) -> Option<(u32, u8)> {
        (0..=self.max_order().0).find_map(|o| {
            let head = pfn & !((1u32 << o) - 1);
            self.frames.at(head).is_free_head_of(o).then_some((head, o))
        })
    }

    /// Give every frame of the pageblock at `start` to `owner`, one order-0 block each.
    fn boot_take_pageblock(&mut self, start: u32, owner: OwnerKind) -> Result<()> {
        let pb = 1u32 << self.pageblock_order().0;
        for pfn in start..start + pb {
            let taken = self.free_head_of(pfn).and_then(|(head, _)| {
                self.alloc_frame_in(Pfn(head.into()), Pfn(pfn.into()), owner)
            });
            if taken.is_none() {
                return Err(MmError::InvalidConfig {
                    what: "kernel.boot: a boot pageblock was not free",
                });
            }
        }
        Ok(())
    }

    /// Free `free[o]` blocks of each order `o` inside the pageblocks at `starts` (placed
    /// as the module doc says).
    fn boot_free(&mut self, starts: &[u32], free: &[u64]) -> Result<()> {
        let pb_order = self.pageblock_order().0;
        let max_order = self.max_order().0 as usize;
        let pb = 1u32 << pb_order;
        // Below this offset each pageblock is still all the kernel's.
        let mut tops = vec![pb; starts.len()];
        let mut whole = vec![false; starts.len()];
        let mut next = 0usize;
        for order in (0..free.len()).rev() {
            for _ in 0..free[order] {
                let (i, offset) = if order >= pb_order as usize {
                    // Whole pageblocks: an aligned run of them, each untouched, whose
                    // buddy run (below the top order) the kernel keeps a frame of.
                    let span = 1u32 << order;
                    let run = |head: u32| (head..head + span).step_by(pb as usize);
                    let index = |s: u32| starts.iter().position(|&t| t == s);
                    let untouched = |s: u32| index(s).is_some_and(|j| tops[j] == pb && !whole[j]);
                    let kept = |s: u32| index(s).is_some_and(|j| !whole[j]);
                    let i = (0..starts.len())
                        .find(|&i| {
                            let head = starts[i];
                            head.is_multiple_of(span)
                                && run(head).all(untouched)
                                && (order == max_order || run(head ^ span).any(kept))
                        })
                        .ok_or(MmError::InvalidConfig {
                            what: "kernel.boot: too many whole free pageblocks for the pageblocks kept",
                        })?;
                    for s in run(starts[i]) {
                        let j = index(s).expect("the run's pageblocks were found above");
                        whole[j] = true;
                    }
                    (i, 0)
                } else {
                    let size = 1u32 << order;
                    let fits = |i: usize| !whole[i] && tops[i] >= 2 * size;
                    let i = (0..starts.len())
                        .map(|k| (next + k) % starts.len())
                        .find(|&i| fits(i))
                        .ok_or(MmError::InvalidConfig {
                            what:
                                "kernel.boot: the free blocks do not fit in the kernel pageblocks",
                        })?;
                    next = (i + 1) % starts.len();
                    (i, (tops[i] - 2 * size) & !(size - 1))
                };
                tops[i] = offset;
                let head = starts[i] + offset;
                for pfn in head..head + (1 << order) {
                    self.free(Pfn(pfn.into()), Order(0))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugemm_hw::Geometry;

    /// The 4 GB Linux 4.1 guest's boot (`docs/linux-4.1-data/2026-11-28/pagetypeinfo-boot.txt`,
    /// its three zones added up).
    fn guest_4_1() -> BootKernelMemory {
        BootKernelMemory {
            unmovable: BootPageblocks {
                pageblocks: 71,
                free: vec![1, 2, 9, 5, 2, 2, 1, 0, 29, 2],
            },
            reclaimable: BootPageblocks {
                pageblocks: 6,
                free: vec![0, 1, 1, 6, 1, 0, 1, 2, 2, 2],
            },
        }
    }

    #[test]
    fn a_measured_boot_state_is_recreated_block_for_block() {
        let mut m = PhysMem::new(1 << 20, Geometry::X86_64).unwrap();
        m.queue_boot_memory_highest_first().unwrap();
        let boot = guest_4_1();
        m.boot_kernel_memory(&boot, true).unwrap();
        assert_eq!(m.pageblocks(MigrateType::Unmovable), 71);
        assert_eq!(m.pageblocks(MigrateType::Reclaimable), 6);
        assert_free_lists_as_listed(&m, &boot);
        // 27,663 Unmovable and 1,146 Reclaimable frames held (the guest: 32,369 frames
        // in use at boot, 3,563 of them page cache).
        let held = m.frames_total() - m.frames_free();
        assert_eq!(held, 71 * 512 - 8_689 + 6 * 512 - 1_926);
        // The highest 77 pageblocks, first come, first taken.
        let top = (1u32 << 20) - 77 * 512;
        assert!((top..1 << 20)
            .step_by(512)
            .all(|s| m.blocks.type_of(s) != MigrateType::Movable));
        assert_eq!(m.blocks.type_of(top - 512), MigrateType::Movable);
        m.check_counters().unwrap();
    }

    /// Every free list of the kernel types holds what `boot` lists, order by order.
    fn assert_free_lists_as_listed(m: &PhysMem, boot: &BootKernelMemory) {
        for (spec, mt) in [
            (&boot.unmovable, MigrateType::Unmovable),
            (&boot.reclaimable, MigrateType::Reclaimable),
        ] {
            for o in 0..=m.max_order().0 {
                let n = spec.free.get(o as usize).copied().unwrap_or(0);
                assert_eq!(m.free_blocks_of(Order(o), mt), n, "{mt:?} order {o}");
            }
        }
    }

    #[test]
    fn a_free_block_of_two_pageblocks_is_recreated_whole() {
        // The 2 GB Linux 4.1 guest's boot without page_owner
        // (`docs/linux-4.1-data/2026-11-29-boot/no-page-owner-2048/`): one free order-10
        // Unmovable block, two whole pageblocks of the 11.
        let mut m = PhysMem::new(1 << 19, Geometry::X86_64).unwrap();
        m.queue_boot_memory_highest_first().unwrap();
        let boot = BootKernelMemory {
            unmovable: BootPageblocks {
                pageblocks: 11,
                free: vec![12, 5, 3, 0, 0, 0, 1, 0, 1, 0, 1],
            },
            reclaimable: BootPageblocks {
                pageblocks: 6,
                free: vec![1, 1, 2, 2, 2, 1, 1, 2, 2, 2],
            },
        };
        m.boot_kernel_memory(&boot, true).unwrap();
        assert_eq!(m.pageblocks(MigrateType::Unmovable), 11);
        assert_eq!(m.pageblocks(MigrateType::Reclaimable), 6);
        assert_free_lists_as_listed(&m, &boot);
        m.check_counters().unwrap();
        // A whole pageblock with no pageblock left for it (or for a buddy the kernel
        // keeps): refused.
        let mut m = PhysMem::new(1 << 19, Geometry::X86_64).unwrap();
        let whole = BootKernelMemory {
            unmovable: BootPageblocks {
                pageblocks: 3,
                free: vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
            },
            ..BootKernelMemory::default()
        };
        assert!(m.boot_kernel_memory(&whole, true).is_err());
    }

    #[test]
    fn a_boot_state_that_does_not_fit_is_refused_by_name() {
        let mut m = PhysMem::new(8 * 512, Geometry::X86_64).unwrap();
        let too_many = BootKernelMemory {
            unmovable: BootPageblocks {
                pageblocks: 9,
                free: vec![],
            },
            ..BootKernelMemory::default()
        };
        let err = m.boot_kernel_memory(&too_many, false).unwrap_err();
        assert!(err.to_string().contains("kernel.boot"), "{err}");
        let crowded = BootKernelMemory {
            unmovable: BootPageblocks {
                pageblocks: 1,
                free: vec![0, 0, 0, 0, 0, 0, 0, 0, 2],
            },
            ..BootKernelMemory::default()
        };
        let mut m = PhysMem::new(8 * 512, Geometry::X86_64).unwrap();
        assert!(m.boot_kernel_memory(&crowded, false).is_err());
        let mut m = PhysMem::new(8 * 512, Geometry::X86_64).unwrap();
        m.alloc(&crate::phys::buddy::AllocRequest::new(Order(0)))
            .unwrap();
        assert!(m.boot_kernel_memory(&guest_4_1(), false).is_err());
    }
}
