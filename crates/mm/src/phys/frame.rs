//! Per-frame metadata: 16 bytes a frame (Linux's `struct page` is 64), so a 1 TB machine
//! needs 4 GB of metadata.
//!
//! Owns the packed representation and its accessors. It must not know about lists,
//! pageblocks or page tables: the buddy allocator and the address spaces give the fields
//! their meaning.
//!
//! Layout, one `u128`: bits 0..32 `flags` (state, order, migrate type, owner kind, and
//! the content: zeroed, written, first non-zero byte), 32..64 `pid`, 64..128 `data`. For a free-block head `data` holds the intrusive
//! free-list links (previous and next head as `u32` frame indices); for an allocated
//! anonymous or page-table frame `pid` and `data` are its reverse map (owning process,
//! virtual page number); for a page-cache frame `pid` is 0 and `data` packs the file id
//! (high 32 bits) and the page index in the file (low 32 bits), so a file's cached pages
//! are limited to indices below 2^32 (16 TB of 4 KB pages). An all-zero frame is a dirty free-block tail, so a machine boots
//! from `vec![0u128; n]`, which the allocator hands out as lazily zeroed pages: a 64 GB
//! machine's 256 MB of metadata costs nothing until touched.

use crate::api::FileId;
use crate::phys::pageblock::MigrateType;
use hugemm_hw::{Order, Pid, Vpn};
use serde::{Deserialize, Serialize};

/// The end of a free list: no frame.
pub(crate) const NIL: u32 = u32::MAX;

const STATE_MASK: u32 = 0b11;
const FREE_TAIL: u32 = 0;
const FREE_HEAD: u32 = 1;
const ALLOCATED: u32 = 2;
const ALLOCATED_TAIL: u32 = 3;
const ORDER_SHIFT: u32 = 2;
const ORDER_MASK: u32 = 0x1f;
const MT_SHIFT: u32 = 7;
const OWNER_SHIFT: u32 = 9;
const OWNER_MASK: u32 = 0b111;
const ZEROED: u32 = 1 << 12;
const WRITTEN: u32 = 1 << 13;
const FIRST_NZ_SHIFT: u32 = 14;
const FIRST_NZ_MASK: u32 = 0xfff;
/// The content bits, which state changes keep (only freeing forgets them).
const CONTENT: u32 = ZEROED | WRITTEN | (FIRST_NZ_MASK << FIRST_NZ_SHIFT);

/// Who owns an allocated frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum OwnerKind {
    /// Anonymous user memory (movable; has a reverse map).
    Anon = 0,
    /// A page-table page (unmovable).
    PageTable = 1,
    /// Unmovable kernel memory (slab, kernel stacks...).
    KernelUnmovable = 2,
    /// Reclaimable kernel memory (dentry and inode caches...).
    KernelReclaimable = 3,
    /// Page cache (movable and reclaimable).
    PageCache = 4,
    /// Held on a per-CPU page list (`pcp.rs`): free to its CPU, not to the buddy
    /// allocator; neither pinned nor movable.
    PerCpu = 5,
}

impl OwnerKind {
    /// All owner kinds.
    pub const ALL: [OwnerKind; 6] = [
        OwnerKind::Anon,
        OwnerKind::PageTable,
        OwnerKind::KernelUnmovable,
        OwnerKind::KernelReclaimable,
        OwnerKind::PageCache,
        OwnerKind::PerCpu,
    ];

    /// Whether compaction could migrate frames of this owner (Linux: `PageLRU` or
    /// `__PageMovable`, as counted by `move_freepages_block`).
    pub const fn is_movable(self) -> bool {
        matches!(self, OwnerKind::Anon | OwnerKind::PageCache)
    }

    /// Whether frames of this owner pin their pageblock (kernel memory and page tables:
    /// what makes a user pageblock "tainted", APSys'16 2.3).
    pub const fn is_pinned(self) -> bool {
        !matches!(
            self,
            OwnerKind::Anon | OwnerKind::PageCache | OwnerKind::PerCpu
        )
    }

    const fn from_bits(bits: u32) -> OwnerKind {
        match bits & OWNER_MASK {
            0 => OwnerKind::Anon,
            1 => OwnerKind::PageTable,
            3 => OwnerKind::KernelReclaimable,
            4 => OwnerKind::PageCache,
            5 => OwnerKind::PerCpu,
            _ => OwnerKind::KernelUnmovable,
        }
    }
}

/// The allocation state of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameState {
    /// First frame of a free buddy block, on the free list of `migrate` at `order`.
    FreeHead {
        /// The block's order.
        order: Order,
        /// The free list it is on.
        migrate: MigrateType,
    },
    /// A frame inside a free block (not its first).
    FreeTail,
    /// First frame of an allocated block of `order` (a compound head when order > 0).
    Allocated {
        /// The block's order.
        order: Order,
        /// Its owner.
        owner: OwnerKind,
    },
    /// A frame inside an allocated block (a compound tail).
    AllocatedTail {
        /// The block's owner.
        owner: OwnerKind,
    },
}

/// The metadata of one physical frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frame(u128);

/// Bytes of metadata per physical frame.
pub const BYTES_PER_FRAME: usize = std::mem::size_of::<Frame>();

/// Frame metadata must stay compact (docs/design.md: <= 16 bytes a frame).
const _: () = assert!(std::mem::size_of::<Frame>() <= 16);

impl Frame {
    /// A dirty free-block tail: the boot state of every frame.
    pub const ZERO: Frame = Frame(0);

    #[inline]
    fn flags(&self) -> u32 {
        self.0 as u32
    }

    #[inline]
    fn pid(&self) -> u32 {
        (self.0 >> 32) as u32
    }

    #[inline]
    fn data(&self) -> u64 {
        (self.0 >> 64) as u64
    }

    #[inline]
    fn set_flags(&mut self, flags: u32) {
        self.0 = (self.0 & !0xffff_ffff) | flags as u128;
    }

    #[inline]
    fn set_pid_data(&mut self, pid: u32, data: u64) {
        self.0 = (self.0 & 0xffff_ffff) | ((pid as u128) << 32) | ((data as u128) << 64);
    }

    #[inline]
    fn set_data(&mut self, data: u64) {
        self.0 = (self.0 & ((1 << 64) - 1)) | ((data as u128) << 64);
    }

    /// The frame's allocation state.
    pub fn state(&self) -> FrameState {
        let order = Order(((self.flags() >> ORDER_SHIFT) & ORDER_MASK) as u8);
        let owner = OwnerKind::from_bits(self.flags() >> OWNER_SHIFT);
        match self.flags() & STATE_MASK {
            FREE_HEAD => FrameState::FreeHead {
                order,
                migrate: MigrateType::from_bits(self.flags() >> MT_SHIFT),
            },
            ALLOCATED => FrameState::Allocated { order, owner },
            ALLOCATED_TAIL => FrameState::AllocatedTail { owner },
            _ => FrameState::FreeTail,
        }
    }

    /// Whether the frame's content is known to be zero.
    pub fn is_zeroed(&self) -> bool {
        self.flags() & ZEROED != 0
    }

    /// Whether the process mapping this anonymous frame has written it since it was
    /// allocated: its content ([`Frame::first_nonzero`]) is then what the write left.
    pub fn is_written(&self) -> bool {
        self.flags() & WRITTEN != 0
    }

    /// The offset of the first non-zero byte of a frame whose content is known and not
    /// zero; `None` for a zero frame (and for a free frame of unknown content).
    pub fn first_nonzero(&self) -> Option<u16> {
        (self.flags() & (ZEROED | WRITTEN) == WRITTEN)
            .then(|| ((self.flags() >> FIRST_NZ_SHIFT) & FIRST_NZ_MASK) as u16)
    }

    /// Whether the frame is allocated (head or tail of an allocated block).
    pub fn is_allocated(&self) -> bool {
        self.flags() & STATE_MASK >= ALLOCATED
    }

    /// The owner of an allocated frame.
    pub fn owner(&self) -> Option<OwnerKind> {
        self.is_allocated()
            .then(|| OwnerKind::from_bits(self.flags() >> OWNER_SHIFT))
    }

    /// The reverse map of an allocated frame: the process and virtual page mapping it.
    pub fn rmap(&self) -> Option<(Pid, Vpn)> {
        (self.is_allocated() && self.pid() != 0).then_some((Pid(self.pid()), Vpn(self.data())))
    }

    /// The page-cache reverse map of an allocated page-cache frame: its file and page
    /// index.
    pub fn cache_rmap(&self) -> Option<(FileId, u64)> {
        (self.owner() == Some(OwnerKind::PageCache) && self.pid() == 0).then(|| {
            (
                FileId((self.data() >> 32) as u32),
                self.data() & 0xffff_ffff,
            )
        })
    }

    /// Whether this is the head of a free block of exactly `order` (the buddy test).
    #[inline]
    pub(crate) fn is_free_head_of(&self, order: u8) -> bool {
        self.flags() & (STATE_MASK | (ORDER_MASK << ORDER_SHIFT))
            == FREE_HEAD | ((order as u32) << ORDER_SHIFT)
    }

    /// The order field (meaningful for heads).
    pub(crate) fn order_bits(&self) -> u8 {
        ((self.flags() >> ORDER_SHIFT) & ORDER_MASK) as u8
    }

    /// The migrate-type field (meaningful for free heads).
    pub(crate) fn migrate_bits(&self) -> MigrateType {
        MigrateType::from_bits(self.flags() >> MT_SHIFT)
    }

    fn set_state(&mut self, state: u32, order: u8, extra: u32) {
        let content = self.flags() & CONTENT;
        self.set_flags(state | ((order as u32 & ORDER_MASK) << ORDER_SHIFT) | extra | content);
    }

    /// Make this the head of a free block on `mt`'s list at `order` (keeps the content).
    pub(crate) fn set_free_head(&mut self, order: u8, mt: MigrateType) {
        self.set_state(FREE_HEAD, order, (mt as u32) << MT_SHIFT);
    }

    /// Make this a free-block tail (keeps the content, drops links and rmap).
    pub(crate) fn set_free_tail(&mut self) {
        self.set_state(FREE_TAIL, 0, 0);
        self.set_pid_data(0, 0);
    }

    /// Make this the head of an allocated block (keeps the content, clears the rmap).
    pub(crate) fn set_allocated(&mut self, order: u8, owner: OwnerKind) {
        self.set_state(ALLOCATED, order, (owner as u32) << OWNER_SHIFT);
        self.set_pid_data(0, 0);
    }

    /// Make this a tail of an allocated block (keeps the content, clears the rmap).
    pub(crate) fn set_allocated_tail(&mut self, owner: OwnerKind) {
        self.set_state(ALLOCATED_TAIL, 0, (owner as u32) << OWNER_SHIFT);
        self.set_pid_data(0, 0);
    }

    /// Record whether the content is known zero, and that nobody has written it since
    /// (a cleared or freed frame).
    pub(crate) fn set_zeroed(&mut self, zeroed: bool) {
        self.set_flags((self.flags() & !CONTENT) | if zeroed { ZEROED } else { 0 });
    }

    /// Record a write by the mapping process that left the content `first_nonzero`
    /// (`None`: all zero; `Some(k)`: the first non-zero byte at offset `k`, at most 4095).
    pub(crate) fn set_written(&mut self, first_nonzero: Option<u16>) {
        let content = match first_nonzero {
            None => WRITTEN | ZEROED,
            Some(k) => WRITTEN | ((k as u32 & FIRST_NZ_MASK) << FIRST_NZ_SHIFT),
        };
        self.set_flags((self.flags() & !CONTENT) | content);
    }

    /// Copy the content of `other` (a migration or a collapse copying the page).
    pub(crate) fn copy_content(&mut self, other: Frame) {
        self.set_flags((self.flags() & !CONTENT) | (other.flags() & CONTENT));
    }

    /// Record the reverse map of an allocated frame.
    pub(crate) fn set_rmap(&mut self, pid: Pid, vpn: Vpn) {
        self.set_pid_data(pid.0, vpn.0);
    }

    /// Record the page-cache reverse map: page `index` of `file`.
    pub(crate) fn set_cache_rmap(&mut self, file: FileId, index: u32) {
        self.set_pid_data(0, ((file.0 as u64) << 32) | index as u64);
    }

    /// The free-list links (previous, next) of a free head.
    pub(crate) fn links(&self) -> (u32, u32) {
        (self.data() as u32, (self.data() >> 32) as u32)
    }

    /// Set both free-list links.
    pub(crate) fn set_links(&mut self, prev: u32, next: u32) {
        self.set_data(prev as u64 | ((next as u64) << 32));
    }

    /// Set the previous link.
    pub(crate) fn set_prev(&mut self, prev: u32) {
        self.set_data((self.data() & !0xffff_ffff) | prev as u64);
    }

    /// Set the next link.
    pub(crate) fn set_next(&mut self, next: u32) {
        self.set_data((self.data() & 0xffff_ffff) | ((next as u64) << 32));
    }
}

/// The frames of a machine, stored as raw words so the vector is allocated zeroed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct FrameTable(Vec<u128>);

impl FrameTable {
    /// `n` dirty free tails, in lazily zeroed memory.
    pub fn zeroed(n: usize) -> FrameTable {
        FrameTable(vec![0u128; n])
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Frame `pfn`, which must exist.
    #[inline]
    pub fn at(&self, pfn: u32) -> Frame {
        Frame(self.0[pfn as usize])
    }

    /// Frame `pfn`, if it exists.
    #[inline]
    pub fn get(&self, pfn: u64) -> Option<Frame> {
        self.0.get(usize::try_from(pfn).ok()?).map(|&w| Frame(w))
    }

    /// Change frame `pfn`, which must exist.
    #[inline]
    pub fn update<R>(&mut self, pfn: u32, f: impl FnOnce(&mut Frame) -> R) -> R {
        let word = &mut self.0[pfn as usize];
        let mut frame = Frame(*word);
        let r = f(&mut frame);
        *word = frame.0;
        r
    }

    /// Change `count` frames from `start`; `f` gets the offset and the frame.
    pub fn update_range(&mut self, start: u32, count: u32, mut f: impl FnMut(u32, &mut Frame)) {
        let words = &mut self.0[start as usize..(start as usize + count as usize)];
        for (i, word) in words.iter_mut().enumerate() {
            let mut frame = Frame(*word);
            f(i as u32, &mut frame);
            *word = frame.0;
        }
    }

    /// `count` frames from `start`.
    pub fn range(&self, start: u32, count: u32) -> impl Iterator<Item = Frame> + '_ {
        self.0[start as usize..(start as usize + count as usize)]
            .iter()
            .map(|&w| Frame(w))
    }
}

impl std::fmt::Debug for FrameTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrameTable({} frames)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_at_most_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Frame>(), 16);
    }

    #[test]
    fn a_zeroed_vector_is_dirty_free_tails() {
        assert_eq!(Frame::ZERO.state(), FrameState::FreeTail);
        assert!(!Frame::ZERO.is_zeroed());
        assert_eq!(Frame::ZERO.rmap(), None);
    }

    #[test]
    fn state_transitions_keep_the_zeroed_bit() {
        let mut f = Frame::ZERO;
        f.set_zeroed(true);
        f.set_free_head(9, MigrateType::Reclaimable);
        assert_eq!(
            f.state(),
            FrameState::FreeHead {
                order: Order(9),
                migrate: MigrateType::Reclaimable
            }
        );
        assert!(f.is_free_head_of(9) && !f.is_free_head_of(8));
        f.set_allocated(9, OwnerKind::Anon);
        assert!(f.is_zeroed());
        assert_eq!(
            f.state(),
            FrameState::Allocated {
                order: Order(9),
                owner: OwnerKind::Anon
            }
        );
        f.set_allocated_tail(OwnerKind::PageCache);
        assert_eq!(
            f.state(),
            FrameState::AllocatedTail {
                owner: OwnerKind::PageCache
            }
        );
        assert_eq!(f.owner(), Some(OwnerKind::PageCache));
    }

    #[test]
    fn content_survives_state_changes_and_a_write_records_it() {
        let mut f = Frame::ZERO;
        f.set_allocated(0, OwnerKind::Anon);
        f.set_zeroed(true);
        assert!(f.is_zeroed() && !f.is_written() && f.first_nonzero().is_none());
        f.set_written(Some(4095));
        assert!(!f.is_zeroed() && f.is_written());
        f.set_allocated(9, OwnerKind::Anon);
        assert_eq!(
            f.first_nonzero(),
            Some(4095),
            "a compound change keeps content"
        );
        let mut g = Frame::ZERO;
        g.copy_content(f);
        assert_eq!(g.first_nonzero(), Some(4095));
        f.set_written(None);
        assert!(f.is_zeroed() && f.is_written() && f.first_nonzero().is_none());
        f.set_zeroed(false);
        assert!(
            !f.is_zeroed() && !f.is_written(),
            "freeing forgets the content"
        );
    }

    #[test]
    fn links_and_rmap_share_the_data_word() {
        let mut f = Frame::ZERO;
        f.set_free_head(0, MigrateType::Movable);
        f.set_links(7, NIL);
        f.set_prev(3);
        assert_eq!(f.links(), (3, NIL));
        f.set_next(11);
        assert_eq!(f.links(), (3, 11));
        f.set_allocated(0, OwnerKind::Anon);
        f.set_rmap(Pid(5), Vpn(0x7_f000_0000));
        assert_eq!(f.rmap(), Some((Pid(5), Vpn(0x7_f000_0000))));
        f.set_free_tail();
        assert_eq!(f.rmap(), None);
    }

    #[test]
    fn page_cache_frames_pack_file_and_index() {
        let mut f = Frame::ZERO;
        f.set_allocated(0, OwnerKind::PageCache);
        f.set_cache_rmap(FileId(7), u32::MAX);
        assert_eq!(f.cache_rmap(), Some((FileId(7), u32::MAX as u64)));
        assert_eq!(f.rmap(), None, "pid 0: no process maps it");
        f.set_allocated(0, OwnerKind::Anon);
        assert_eq!(f.cache_rmap(), None);
    }

    #[test]
    fn owner_kinds_decode_from_bits() {
        for o in OwnerKind::ALL {
            assert_eq!(OwnerKind::from_bits(o as u32), o);
        }
        assert!(OwnerKind::Anon.is_movable() && !OwnerKind::PageTable.is_movable());
    }
}
