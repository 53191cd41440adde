//! Every page header of a Parquet file checked against its column chunk,
//! its row group and the file's size before anything is decoded.
//!
//! polars-parquet trusts a page header's counts: a data page claiming
//! `num_values = -1` makes it ask for 2^61 bytes, an abort that no
//! `catch_unwind` sees (an allocation failure is not a panic), and a
//! dictionary page claiming `uncompressed_page_size = 2^31-1` makes a 4 KB
//! file cost 2 GB. So the headers are read here first, with the format's
//! own thrift types, and a file is refused unless
//!
//! - each column chunk lies inside the file, and its pages inside the chunk;
//! - each page's counts and sizes are not negative, and its values fit in
//!   what its chunk declares (a flat column's chunk holds one value a row
//!   of its row group, and the row groups add up to the file's rows);
//! - what the pages decode to (their uncompressed bytes and
//!   [`BYTES_PER_VALUE`] for each value) stays within [`budget`]: a small
//!   multiple of the file's size, above a floor for small files.

use polars_core::prelude::{polars_err, PolarsResult};
use polars_parquet::parquet::metadata::{ColumnChunkMetadata, FileMetadata};
use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
use polars_parquet_format::{PageHeader, PageType};

/// What one decoded value costs at most, in bytes: a string's view is 16
/// bytes, a number 8, and each has its validity bit.
const BYTES_PER_VALUE: u64 = 17;

/// How many times its own size a file may decode to, above [`FLOOR`].
/// The tables the replay writes decode to at most a quarter of this
/// (`our_parquet_tables_decode_well_within_the_budget`).
pub(super) const FACTOR: u64 = 256;

/// What any file may decode to whatever its size (64 MiB).
pub(super) const FLOOR: u64 = 64 << 20;

/// The bytes a file of `len` bytes may decode to.
pub(super) fn budget(len: u64) -> u64 {
    FLOOR.saturating_add(FACTOR.saturating_mul(len))
}

/// Refuse a file whose page headers do not fit its footer and its size,
/// reading only the headers; Ok gives what its pages decode to, about.
pub(super) fn check(metadata: &FileMetadata, bytes: &[u8]) -> PolarsResult<u64> {
    let len = bytes.len() as u64;
    let mut left = budget(len);
    let mut rows: u64 = 0;
    for (g, group) in metadata.row_groups.iter().enumerate() {
        let group_rows = group.num_rows() as u64;
        rows = rows.saturating_add(group_rows);
        for column in group.parquet_columns() {
            let at = Place {
                group: g,
                column: &column.descriptor().path_in_schema.join("."),
            };
            chunk(column, bytes, group_rows, &mut left, &at)?;
        }
    }
    if rows != metadata.num_rows as u64 {
        return Err(damaged(format!(
            "its row groups hold {rows} rows, its footer says {}",
            metadata.num_rows
        )));
    }
    Ok(budget(len) - left)
}

/// Where a page is, for the message.
struct Place<'a> {
    group: usize,
    column: &'a str,
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {:?} of row group {}", self.column, self.group)
    }
}

/// One column chunk's pages, as polars-parquet's page reader walks them:
/// page after page until the chunk's values are seen.
fn chunk(
    column: &ColumnChunkMetadata,
    bytes: &[u8],
    group_rows: u64,
    left: &mut u64,
    at: &Place,
) -> PolarsResult<()> {
    let range = column.byte_range();
    if range.start > range.end || range.end > bytes.len() as u64 {
        return Err(damaged(format!(
            "{at} claims bytes {}..{} of a file of {} bytes",
            range.start,
            range.end,
            bytes.len()
        )));
    }
    let total = column.num_values();
    let flat = column.descriptor().descriptor.max_rep_level == 0;
    if total < 0 || (flat && total as u64 != group_rows) {
        return Err(damaged(format!(
            "{at} claims {total} values in a row group of {group_rows} rows"
        )));
    }
    let total = total as u64;
    let mut rest = &bytes[range.start as usize..range.end as usize];
    let mut seen: u64 = 0;
    while seen < total {
        let header = read_header(&mut rest, at)?;
        let (values, counts) = page_values(&header, at)?;
        let (compressed, uncompressed) =
            (header.compressed_page_size, header.uncompressed_page_size);
        if values < 0 || compressed < 0 || uncompressed < 0 {
            return Err(damaged(format!(
                "a page of {at} claims {values} values, {compressed} bytes compressed and {uncompressed} uncompressed"
            )));
        }
        let values = values as u64;
        // A dictionary holds no more entries than its chunk has values.
        let room = if counts { total - seen } else { total };
        if values > room {
            return Err(damaged(format!(
                "a page of {at} claims {values} values, more than the {room} its chunk has left"
            )));
        }
        if compressed as usize > rest.len() {
            return Err(damaged(format!(
                "a page of {at} claims {compressed} bytes where its chunk has {} left",
                rest.len()
            )));
        }
        let cost = (uncompressed as u64).saturating_add(values.saturating_mul(BYTES_PER_VALUE));
        if cost > *left {
            return Err(damaged(format!(
                "its pages decode to more than {} bytes, {}x its size plus {} MiB (at a page of {at})",
                budget(bytes.len() as u64),
                FACTOR,
                FLOOR >> 20
            )));
        }
        *left -= cost;
        if counts {
            seen += values;
        }
        rest = &rest[compressed as usize..];
    }
    Ok(())
}

/// A page header read from the front of `rest`, which moves past it.
fn read_header(rest: &mut &[u8], at: &Place) -> PolarsResult<PageHeader> {
    let max = rest.len();
    let mut protocol = TCompactInputProtocol::new(&mut *rest, max);
    PageHeader::read_from_in_protocol(&mut protocol)
        .map_err(|e| damaged(format!("a page header of {at} does not read: {e}")))
}

/// A page's count of values, and whether it counts toward its chunk's
/// (data pages do; a dictionary's entries are not the chunk's values).
fn page_values(h: &PageHeader, at: &Place) -> PolarsResult<(i32, bool)> {
    let missing = || {
        damaged(format!(
            "a page header of {at} lacks the header of its type"
        ))
    };
    Ok(match h.type_ {
        PageType::DATA_PAGE => (
            h.data_page_header.as_ref().ok_or_else(missing)?.num_values,
            true,
        ),
        PageType::DATA_PAGE_V2 => (
            h.data_page_header_v2
                .as_ref()
                .ok_or_else(missing)?
                .num_values,
            true,
        ),
        PageType::DICTIONARY_PAGE => (
            h.dictionary_page_header
                .as_ref()
                .ok_or_else(missing)?
                .num_values,
            false,
        ),
        other => {
            return Err(damaged(format!(
                "a page of {at} is of type {}, which a table of ours never holds",
                other.0
            )))
        }
    })
}

fn damaged(why: String) -> polars_core::prelude::PolarsError {
    polars_err!(ComputeError: "the file is damaged: {why}")
}
