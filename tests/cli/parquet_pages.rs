//! Damaged Parquet files made on purpose: one page header of a column
//! rewritten, the footer's offsets moved to match, so the damage is in the
//! page and nowhere else.

use polars_parquet_format::thrift::protocol::{TCompactInputProtocol, TCompactOutputProtocol};
use polars_parquet_format::{FileMetaData, PageHeader, PageType};

/// `bytes` with the first page of `kind` in column `column` of the first
/// row group edited by `edit`; None when there is no such page.
pub fn edit_page(
    bytes: &[u8],
    column: &str,
    kind: PageType,
    edit: impl Fn(&mut PageHeader),
) -> Option<Vec<u8>> {
    let n = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let footer_at = n - 8 - footer_len;
    let mut footer = &bytes[footer_at..n - 8];
    let mut meta = FileMetaData::read_from_in_protocol(&mut TCompactInputProtocol::new(
        &mut footer,
        usize::MAX,
    ))
    .unwrap();
    let chunk = meta.row_groups[0]
        .columns
        .iter()
        .find(|c| c.meta_data.as_ref().unwrap().path_in_schema.join(".") == column)?;
    let m = chunk.meta_data.as_ref().unwrap();
    let mut at = m.dictionary_page_offset.unwrap_or(m.data_page_offset) as usize;
    let end = at + m.total_compressed_size as usize;
    // Walk the chunk's pages to the first of that kind.
    let (start, old_len, mut header) = loop {
        if at >= end {
            return None;
        }
        let mut rest = &bytes[at..end];
        let before = rest.len();
        let h = PageHeader::read_from_in_protocol(&mut TCompactInputProtocol::new(
            &mut rest,
            usize::MAX,
        ))
        .unwrap();
        let len = before - rest.len();
        if h.type_ == kind {
            break (at, len, h);
        }
        at += len + h.compressed_page_size as usize;
    };
    edit(&mut header);
    let mut written = Vec::new();
    header
        .write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut written))
        .unwrap();
    let delta = written.len() as i64 - old_len as i64;
    let shift = |o: &mut i64| {
        if *o as usize > start {
            *o += delta
        }
    };
    for group in &mut meta.row_groups {
        for c in &mut group.columns {
            let m = c.meta_data.as_mut().unwrap();
            let first = m.dictionary_page_offset.unwrap_or(m.data_page_offset) as usize;
            if first <= start && start < first + m.total_compressed_size as usize {
                m.total_compressed_size += delta;
            }
            shift(&mut m.data_page_offset);
            if let Some(o) = m.dictionary_page_offset.as_mut() {
                shift(o)
            }
            if let Some(o) = m.index_page_offset.as_mut() {
                shift(o)
            }
            if let Some(o) = c.offset_index_offset.as_mut() {
                shift(o)
            }
            if let Some(o) = c.column_index_offset.as_mut() {
                shift(o)
            }
        }
        if let Some(o) = group.file_offset.as_mut() {
            shift(o)
        }
    }
    let mut out = bytes[..start].to_vec();
    out.extend_from_slice(&written);
    out.extend_from_slice(&bytes[start + old_len..footer_at]);
    let mut footer = Vec::new();
    meta.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut footer))
        .unwrap();
    out.extend_from_slice(&footer);
    out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    out.extend_from_slice(b"PAR1");
    Some(out)
}
