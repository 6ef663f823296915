//! `/proc/pagetypeinfo`: free blocks per order per migrate type, and pageblocks per migrate
//! type, in each zone (`mm/vmstat.c`, `pagetypeinfo_show`). Readable by root only.
//!
//! The kernel writes one section per node, each starting with the pageblock order:
//!
//! ```text
//! Page block order: 9
//! Pages per block:  512
//!
//! Free pages count per migrate type at order       0      1 ...     10
//! Node    0, zone   Normal, type      Movable      0  10949 ...    302
//!
//! Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate
//! Node 0, zone   Normal           86         2671          123            0            0
//! ```
//!
//! A free count the kernel stopped counting at is printed `>100000` and read as a lower
//! bound ([`FreeCounts::capped`]). With `page_owner` enabled a third table, `Number of mixed
//! blocks`, follows; it is read into [`PageTypeInfo::mixed_blocks`]. This module owns the
//! parsing; it must not judge fragmentation.

use super::text::{self, lines, read_text, Line};
use super::zone::{node_zone, FreeCounts, HostMigrateType, Zone, MAX_ORDERS};
use crate::error::Result;
use hugemm_hw::Order;
use hugemm_mm::NodeId;
use serde::Serialize;
use std::path::Path;

/// Where the kernel serves the file.
pub const PATH: &str = "/proc/pagetypeinfo";

const ORDER_KEY: &str = "Page block order:";
const PAGES_KEY: &str = "Pages per block:";
const FREE_HEADER: &str = "Free pages count per migrate type at order";
const BLOCKS_HEADER: &str = "Number of blocks type";
const MIXED_HEADER: &str = "Number of mixed blocks";

/// Free blocks of one migrate type in one zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeFree {
    /// The NUMA node.
    pub node: NodeId,
    /// The zone.
    pub zone: Zone,
    /// The migrate type of the free lists.
    pub migrate_type: HostMigrateType,
    /// Free blocks per order.
    pub free: FreeCounts,
}

/// Pageblocks per migrate type in one zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneBlocks {
    /// The NUMA node.
    pub node: NodeId,
    /// The zone.
    pub zone: Zone,
    /// Pageblocks of each migrate type, in the kernel's column order.
    pub counts: Vec<(HostMigrateType, u64)>,
}

impl ZoneBlocks {
    /// Pageblocks of `migrate_type` (0 when the kernel has no such column).
    pub fn of(&self, migrate_type: HostMigrateType) -> u64 {
        self.counts
            .iter()
            .find(|(t, _)| *t == migrate_type)
            .map_or(0, |(_, n)| *n)
    }
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PageTypeInfo {
    /// The order of a pageblock (9 on x86-64).
    pub pageblock_order: Order,
    /// Free lists, one entry per zone and migrate type, in file order.
    pub free: Vec<TypeFree>,
    /// Pageblock counts per zone, in file order.
    pub blocks: Vec<ZoneBlocks>,
    /// Pageblocks holding pages of another type per zone (only with `page_owner`).
    pub mixed_blocks: Vec<ZoneBlocks>,
}

/// Which table the lines being read belong to.
enum Table {
    None,
    Free { orders: usize },
    Blocks { types: Vec<HostMigrateType> },
    Mixed { types: Vec<HostMigrateType> },
}

impl PageTypeInfo {
    /// Read and parse the host's `/proc/pagetypeinfo` (root only).
    pub fn read() -> Result<PageTypeInfo> {
        PageTypeInfo::read_path(Path::new(PATH))
    }

    /// Read and parse `path`.
    pub fn read_path(path: &Path) -> Result<PageTypeInfo> {
        PageTypeInfo::parse(path, &read_text(path)?)
    }

    /// Parse `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<PageTypeInfo> {
        let mut info = PageTypeInfo {
            pageblock_order: Order(0),
            free: Vec::new(),
            blocks: Vec::new(),
            mixed_blocks: Vec::new(),
        };
        let mut order: Option<Order> = None;
        let mut table = Table::None;
        for line in lines(path, text) {
            if line.text.trim().is_empty() {
                continue;
            }
            table = info.line(&line, table, &mut order)?;
        }
        let (Some(order), false) = (order, info.blocks.is_empty()) else {
            return Err(text::early_end(
                path,
                text,
                "a `Number of blocks type` table",
            ));
        };
        info.pageblock_order = order;
        Ok(info)
    }

    /// Take in one non-blank line read under `table`; return the table the next line
    /// belongs to.
    fn line(&mut self, line: &Line<'_>, table: Table, order: &mut Option<Order>) -> Result<Table> {
        let t = line.text;
        if let Some(rest) = t.strip_prefix(ORDER_KEY) {
            let o = Order(line.parse(rest.trim(), "a pageblock order")?);
            if order.is_some_and(|known| known != o) {
                return Err(line.error("the same pageblock order in every section", t));
            }
            *order = Some(o);
            return Ok(Table::None);
        }
        if let Some(rest) = t.strip_prefix(PAGES_KEY) {
            let pages: u64 = line.parse(rest.trim(), "a page count")?;
            let o = order.ok_or_else(|| line.error(format!("`{ORDER_KEY}` first"), t))?;
            if u32::from(o.0) >= 64 || pages != 1 << o.0 {
                return Err(line.error("2^(pageblock order) pages per block", t));
            }
            return Ok(Table::None);
        }
        if let Some(rest) = t.strip_prefix(FREE_HEADER) {
            return Ok(Table::Free {
                orders: order_header(line, rest)?,
            });
        }
        if let Some(rest) = t.strip_prefix(BLOCKS_HEADER) {
            return Ok(Table::Blocks {
                types: type_header(line, rest)?,
            });
        }
        if let Some(rest) = t.strip_prefix(MIXED_HEADER) {
            return Ok(Table::Mixed {
                types: type_header(line, rest)?,
            });
        }
        self.row(line, &table)?;
        Ok(table)
    }

    /// A `Node N, zone NAME ...` row of `table`.
    fn row(&mut self, line: &Line<'_>, table: &Table) -> Result<()> {
        let mut tokens = line.text.split_whitespace();
        match table {
            Table::None => Err(line.error("a section header", line.text)),
            Table::Free { orders } => {
                let (node, zone) = node_zone(line, &mut tokens, true)?;
                line.expect(&mut tokens, "type")?;
                let name = line.next(&mut tokens, "a migrate type")?;
                let migrate_type = migrate_type(line, name)?;
                let free = free_counts(line, tokens, *orders)?;
                self.free.push(TypeFree {
                    node,
                    zone,
                    migrate_type,
                    free,
                });
                Ok(())
            }
            Table::Blocks { types } | Table::Mixed { types } => {
                let (node, zone) = node_zone(line, &mut tokens, false)?;
                let counts = block_counts(line, tokens, types)?;
                let row = ZoneBlocks { node, zone, counts };
                match table {
                    Table::Blocks { .. } => self.blocks.push(row),
                    _ => self.mixed_blocks.push(row),
                }
                Ok(())
            }
        }
    }

    /// How many huge pages of order `huge` the free lists of `migrate_type` (all types when
    /// `None`) hold in blocks of that order or larger, over all zones.
    pub fn free_huge_blocks(&self, huge: Order, migrate_type: Option<HostMigrateType>) -> u64 {
        self.free
            .iter()
            .filter(|f| migrate_type.is_none_or(|t| t == f.migrate_type))
            .fold(0, |sum, f| sum.saturating_add(f.free.huge_blocks(huge)))
    }

    /// Pageblocks of `migrate_type` over all zones.
    pub fn pageblocks(&self, migrate_type: HostMigrateType) -> u64 {
        self.blocks
            .iter()
            .fold(0, |sum, z| sum.saturating_add(z.of(migrate_type)))
    }
}

/// The order columns `0 1 ... n-1` of the free table's header: n.
fn order_header(line: &Line<'_>, rest: &str) -> Result<usize> {
    let mut orders = 0;
    for token in rest.split_whitespace() {
        let o: usize = line.parse(token, "an order number")?;
        if o != orders || o >= MAX_ORDERS {
            return Err(line.error(format!("order {orders} (orders count up from 0)"), token));
        }
        orders += 1;
    }
    if orders == 0 {
        return Err(line.error("order columns", line.text));
    }
    Ok(orders)
}

/// The migrate-type columns of a block table's header.
fn type_header(line: &Line<'_>, rest: &str) -> Result<Vec<HostMigrateType>> {
    let types = rest
        .split_whitespace()
        .map(|name| migrate_type(line, name))
        .collect::<Result<Vec<_>>>()?;
    if types.is_empty() {
        return Err(line.error("migrate-type columns", line.text));
    }
    Ok(types)
}

fn migrate_type(line: &Line<'_>, name: &str) -> Result<HostMigrateType> {
    HostMigrateType::from_name(name).ok_or_else(|| {
        line.error(
            "a migrate type (Unmovable, Movable, Reclaimable, HighAtomic, CMA, Isolate)",
            name,
        )
    })
}

/// Exactly `orders` free counts, each a number or `>number` (a lower bound).
fn free_counts<'t>(
    line: &Line<'_>,
    tokens: impl Iterator<Item = &'t str>,
    orders: usize,
) -> Result<FreeCounts> {
    let mut counts = Vec::with_capacity(orders);
    let mut capped = false;
    for token in tokens {
        let digits = token
            .strip_prefix('>')
            .inspect(|_| capped = true)
            .unwrap_or(token);
        counts.push(line.parse(digits, "a free-block count")?);
    }
    if counts.len() != orders {
        return Err(line.error(format!("{orders} free counts, one per order"), line.text));
    }
    Ok(FreeCounts::new(counts, capped))
}

/// One count per column of `types`.
fn block_counts<'t>(
    line: &Line<'_>,
    tokens: impl Iterator<Item = &'t str>,
    types: &[HostMigrateType],
) -> Result<Vec<(HostMigrateType, u64)>> {
    let counts = tokens
        .map(|t| line.parse(t, "a pageblock count"))
        .collect::<Result<Vec<u64>>>()?;
    if counts.len() != types.len() {
        let expected = format!("{} pageblock counts, one per migrate type", types.len());
        return Err(line.error(expected, line.text));
    }
    Ok(types.iter().copied().zip(counts).collect())
}
