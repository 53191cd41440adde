//! The parse-only pass (`critic-gate parse-only`, hidden): read and parse
//! every line exactly as a replay does, evaluating nothing. The
//! benchmark's baseline: the cost of reading and parsing JSON that any
//! replay pays.

use crate::read::reader::{self, Block, ReadError, Source};
use crate::read::turn::Turn;
use crate::replay::{is_blank, without_bom};

/// What the pass read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub turns: u64,
    pub invalid: u64,
    pub bytes: u64,
}

/// Read and parse `sources` on the current rayon pool, scheduled as
/// a replay schedules its blocks (`pipeline::run`).
pub fn parse_only(sources: &[String]) -> crate::Result<Parsed> {
    let threads = rayon::current_num_threads();
    let (rx, recycler) = reader::blocks_recycled(
        sources.iter().map(|f| Source::named(f)).collect(),
        2 * threads + 2,
        reader::DEFAULT_MAX_LINE_BYTES,
    )?;
    let mut total = Parsed::default();
    crate::replay::ordered::map_in_order(
        None,
        rx,
        2 * threads + 2,
        |item: Result<Block, ReadError>| item.map(|b| (parse_block(&b), b)),
        |item| -> crate::Result<()> {
            let (p, b) = item?;
            total.turns += p.turns;
            total.invalid += p.invalid;
            total.bytes += p.bytes;
            recycler.give(b);
            Ok(())
        },
    )?;
    Ok(total)
}

fn parse_block(b: &Block) -> Parsed {
    let mut p = Parsed {
        bytes: b.bytes().len() as u64,
        ..Parsed::default()
    };
    for (n, l) in reader::lines(b) {
        let l = without_bom(n, l);
        if is_blank(l) {
            continue;
        }
        match std::str::from_utf8(l).ok().map(Turn::parse) {
            Some(Ok(_)) => p.turns += 1,
            _ => p.invalid += 1,
        }
    }
    p
}
