//! `hugemm run --frame-maps SECONDS`: the model's physical memory as `/proc/kpageflags`
//! files, for `tools/linux-4.1-guest/layout.py` to read beside a real kernel's.
//!
//! Each map is `OUT/frame-maps/kpageflags-<time in ms, 10 digits>ms.bin.gz`: one
//! little-endian 64-bit word of `KPF_*` bits per frame, frame 0 first (the layout of
//! `/proc/kpageflags` on x86-64; which bits the model sets is in `hugemm_mm`'s
//! `kpageflags` module), gzipped.

use flate2::write::GzEncoder;
use flate2::Compression;
use hugemm_sim::FrameMapSink;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Writes each frame map to its own file under `dir` (created on the first map).
pub struct FrameMapWriter {
    dir: PathBuf,
}

impl FrameMapWriter {
    /// Maps go to `dir`.
    pub fn new(dir: PathBuf) -> FrameMapWriter {
        FrameMapWriter { dir }
    }

    /// The file of the map at `time_ns`.
    pub fn path(&self, time_ns: u64) -> PathBuf {
        self.dir
            .join(format!("kpageflags-{:010}ms.bin.gz", time_ns / 1_000_000))
    }
}

impl FrameMapSink for FrameMapWriter {
    fn write(&mut self, time_ns: u64, kpageflags: &[u64]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let file = File::create(self.path(time_ns))?;
        let mut gz = GzEncoder::new(BufWriter::new(file), Compression::fast());
        for word in kpageflags {
            gz.write_all(&word.to_le_bytes())?;
        }
        gz.finish()?.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn a_map_reads_back_as_little_endian_words() {
        let dir = std::env::temp_dir().join(format!("hugemm-framemap-{}", std::process::id()));
        let mut w = FrameMapWriter::new(dir.join("frame-maps"));
        w.write(15_000_000_000, &[1 << 10, 0, 1 << 5 | 1 << 3])
            .unwrap();
        let path = dir.join("frame-maps/kpageflags-0000015000ms.bin.gz");
        assert_eq!(w.path(15_000_000_000), path);
        let mut bytes = Vec::new();
        GzDecoder::new(File::open(&path).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, vec![1 << 10, 0, 40]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
