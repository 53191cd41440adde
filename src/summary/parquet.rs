//! Parquet files, written and read through polars-parquet's arrow API
//! rather than polars-io's: polars-io's `parquet` feature turns on
//! polars-core's `partition_by`, which alone took a clean build's peak
//! memory from 0.94 to 1.15 GB. What polars-io did for us is small: turn a
//! DataFrame's chunks into row groups of encoded, zstd-compressed pages on
//! the way out, and decode each row group's columns on the way back.

mod pages;

use std::io::{Cursor, Write};

use polars_buffer::Buffer;
use polars_core::prelude::*;
use polars_parquet::read::{self as pq_read, BasicDecompressor, PageReader, ParquetError};
use polars_parquet::write::{
    array_to_columns, get_dtype_encoding, to_parquet_schema, CompressionOptions, Compressor,
    DynIter, DynStreamingIterator, Encoding, FallibleStreamingIterator, FileWriter, ParquetType,
    StatisticsOptions, Version, WriteOptions,
};

/// Rows per row group when a whole table is written at once (polars-io's
/// default, so readers see the same layout as before).
const ROW_GROUP: usize = 512 * 512;

/// A Parquet file being written: a row group per [`ParquetFile::write`]
/// (a streamed table writes one per block), the footer on
/// [`ParquetFile::finish`]. Zstd-compressed, with min, max and null-count
/// statistics.
pub(crate) struct ParquetFile<W: Write> {
    writer: FileWriter<W>,
    encodings: Vec<Vec<Encoding>>,
    options: WriteOptions,
}

impl<W: Write> ParquetFile<W> {
    /// Start a file of `schema`'s columns.
    pub(crate) fn new(out: W, schema: &Schema) -> PolarsResult<Self> {
        let arrow = schema.to_arrow(CompatLevel::newest());
        let encodings = arrow
            .iter_values()
            .map(|f| get_dtype_encoding(&f.dtype))
            .collect();
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: CompressionOptions::Zstd(None),
            version: Version::V1,
            data_page_size: None,
        };
        let parquet_schema = to_parquet_schema(&arrow)?;
        let writer = FileWriter::new_with_parquet_schema(out, arrow, parquet_schema, options);
        Ok(ParquetFile {
            writer,
            encodings,
            options,
        })
    }

    /// Append `df`'s rows (its columns in the schema's order), one row
    /// group per aligned chunk.
    pub(crate) fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        let fields: Vec<ParquetType> = self.writer.parquet_schema().fields().to_vec();
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            if batch.is_empty() {
                continue;
            }
            let mut pages = Vec::new();
            for ((array, ty), encoding) in batch.columns().iter().zip(&fields).zip(&self.encodings)
            {
                for column in array_to_columns(array, ty.clone(), self.options, encoding)? {
                    // The compressor takes parquet's own error type.
                    let column = column.map(|page| {
                        page.map_err(|e| ParquetError::FeatureNotSupported(e.to_string()))
                    });
                    let compressed =
                        Compressor::new_from_vec(column, self.options.compression, vec![]);
                    pages.push(Ok(DynStreamingIterator::new(
                        compressed.map_err(PolarsError::from),
                    )));
                }
            }
            self.writer
                .write(batch.len() as u64, DynIter::new(pages.into_iter()))?;
        }
        Ok(())
    }

    /// Write the footer; the file is complete.
    pub(crate) fn finish(mut self) -> PolarsResult<()> {
        self.writer.end(None).map(drop)
    }
}

/// Write a whole DataFrame as one Parquet file.
pub(crate) fn write_frame(df: &mut DataFrame, out: impl Write) -> PolarsResult<()> {
    df.rechunk_mut_par();
    let mut file = ParquetFile::new(out, df.schema())?;
    for offset in (0..df.height()).step_by(ROW_GROUP) {
        file.write(&df.slice(offset as i64, ROW_GROUP))?;
    }
    file.finish()
}

/// Read a whole Parquet file (every row group, every top-level column).
/// A damaged file is an error, never a crash: polars-parquet panics on
/// some damaged footers (it expects thrift fields to be there), so its
/// panic is caught here, with the panic message kept off stderr (the
/// caller names the file and the reason). The hook is the process's:
/// this runs on `check`'s and `diff`'s one thread, before any other work.
pub fn read_frame(bytes: Vec<u8>) -> PolarsResult<DataFrame> {
    read_columns(bytes, None)
}

/// [`read_frame`] of the named top-level columns only (None: every one).
pub(crate) fn read_columns(bytes: Vec<u8>, only: Option<&[&str]>) -> PolarsResult<DataFrame> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_frame(bytes, only)));
    std::panic::set_hook(hook);
    read.unwrap_or_else(|_| {
        Err(polars_err!(
            ComputeError: "the file is damaged: the Parquet reader could not decode it"
        ))
    })
}

/// The bytes a file of `len` bytes may decode to.
pub(crate) fn budget(len: u64) -> u64 {
    pages::budget(len)
}

/// About how many bytes a Parquet file decodes to, from its page headers
/// (a damaged file is an error, as [`read_frame`] gives it); and
/// the multiple of its size it may decode to (above a floor).
pub fn decoded_estimate(bytes: &[u8]) -> PolarsResult<(u64, u64)> {
    let metadata = pq_read::read_metadata(&mut Cursor::new(bytes))?;
    Ok((pages::check(&metadata, bytes)?, pages::FACTOR))
}

fn decode_frame(bytes: Vec<u8>, only: Option<&[&str]>) -> PolarsResult<DataFrame> {
    let metadata = pq_read::read_metadata(&mut Cursor::new(&bytes))?;
    pages::check(&metadata, &bytes)?;
    let schema = pq_read::infer_schema(&metadata)?;
    let bytes = Buffer::from(bytes);
    let mut columns = Vec::with_capacity(schema.len());
    let wanted = |name: &str| only.is_none_or(|o| o.contains(&name));
    for field in schema.iter_values().filter(|f| wanted(f.name.as_str())) {
        let mut series: Option<Series> = None;
        for group in &metadata.row_groups {
            let (decompressors, types): (Vec<_>, Vec<_>) = group
                .columns_under_root_iter(&field.name)
                .ok_or_else(|| polars_err!(ColumnNotFound: "{}", field.name))?
                .map(|meta| {
                    let range = meta.byte_range();
                    let chunk = bytes
                        .clone()
                        .sliced(range.start as usize..range.end as usize);
                    let pages = PageReader::new(Cursor::new(chunk), meta, vec![], usize::MAX);
                    (
                        BasicDecompressor::new(pages, vec![]),
                        &meta.descriptor().descriptor.primitive_type,
                    )
                })
                .unzip();
            let (arrays, _) =
                pq_read::column_iter_to_arrays(decompressors, types, field.clone(), None)?;
            let part = Series::try_from((field, arrays))?;
            series = Some(match series {
                Some(mut s) => {
                    s.append_owned(part)?;
                    s
                }
                None => part,
            });
        }
        let s = match series {
            Some(s) => s,
            None => Series::new_empty(field.name.clone(), &DataType::from_arrow_field(field)),
        };
        columns.push(Column::from(s));
    }
    DataFrame::new(metadata.num_rows, columns)
}
