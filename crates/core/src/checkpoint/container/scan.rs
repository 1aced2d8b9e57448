//! The project's own pre-checks of a safetensors file, run before the
//! `safetensors` crate parses it. They refuse, each with a specific
//! [`CheckpointError`], everything the crate would refuse with a message
//! that names no tensor and no number, and what the crate accepts silently:
//!
//! - framing: a file under 8 bytes, a header length past the end of the file
//!   or above [`MAX_HEADER_LEN`] (the crate allows 100 MB), a header that is
//!   not UTF-8;
//! - header shape: not a JSON object; `__metadata__` not an object of
//!   strings; a repeated `__metadata__`, metadata key or tensor name (the
//!   crate reads the header into hash maps, which keep the last of a repeated
//!   key); a field other than `dtype`, `shape`, `data_offsets` in a tensor
//!   entry (the crate ignores it);
//! - each tensor: a dtype other than F32/F16 (the crate accepts `I32`,
//!   `BF16`, ...), `data_offsets` outside the data region, a byte length other
//!   than `elements × dtype size`;
//! - the data region: tensors that overlap or leave bytes uncovered.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::super::error::CheckpointError;
use super::super::format::Dtype;
use super::super::MAX_HEADER_LEN;

/// The two parts of a file behind its 8-byte length prefix.
#[derive(Debug)]
pub(super) struct Frame<'a> {
    /// The JSON header, checked to be UTF-8 and at most [`MAX_HEADER_LEN`].
    pub header: &'a str,
    /// Everything after the header.
    pub data: &'a [u8],
}

/// Checks the length prefix against the bytes present and the header
/// against [`MAX_HEADER_LEN`] and UTF-8, before anything is allocated.
pub(super) fn frame(bytes: &[u8]) -> Result<Frame<'_>, CheckpointError> {
    let Some((len_bytes, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(CheckpointError::TooShort { len: bytes.len() });
    };
    let header_len = u64::from_le_bytes(*len_bytes);
    if header_len > rest.len() as u64 {
        return Err(CheckpointError::HeaderPastEnd {
            header_len,
            file_len: bytes.len(),
        });
    }
    if header_len > MAX_HEADER_LEN as u64 {
        return Err(CheckpointError::HeaderTooLarge {
            header_len,
            max: MAX_HEADER_LEN,
        });
    }
    // header_len ≤ rest.len(), so it fits in usize.
    let (header, data) = rest.split_at(header_len as usize);
    let header = std::str::from_utf8(header).map_err(|e| CheckpointError::HeaderNotUtf8 {
        offset: 8 + e.valid_up_to(),
    })?;
    Ok(Frame { header, data })
}

/// One tensor entry of the header, as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInfo {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// The tensor entries of a header, in file order; `__metadata__` has been
/// checked (an object of strings, keys unique) and dropped.
struct Tensors(Vec<(String, RawInfo)>);

impl<'de> Deserialize<'de> for Tensors {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TensorsVisitor)
    }
}

struct TensorsVisitor;

impl<'de> Visitor<'de> for TensorsVisitor {
    type Value = Tensors;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of tensors and __metadata__")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tensors, A::Error> {
        let mut tensors = Vec::new();
        let mut seen_metadata = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "__metadata__" {
                if seen_metadata {
                    return Err(de::Error::custom("__metadata__ appears twice"));
                }
                seen_metadata = true;
                map.next_value::<UniqueStrings>()?;
            } else {
                let info = map
                    .next_value::<RawInfo>()
                    .map_err(|e| de::Error::custom(format_args!("tensor {key:?}: {e}")))?;
                tensors.push((key, info));
            }
        }
        Ok(Tensors(tensors))
    }
}

/// A `{str: str}` object that refuses repeated keys (serde's maps, and so
/// the crate's, keep the last silently).
struct UniqueStrings;

impl<'de> Deserialize<'de> for UniqueStrings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(UniqueStringsVisitor)
    }
}

struct UniqueStringsVisitor;

impl<'de> Visitor<'de> for UniqueStringsVisitor {
    type Value = UniqueStrings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of string values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueStrings, A::Error> {
        let mut keys = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<String>()?;
            if keys.contains(&key) {
                return Err(de::Error::custom(format_args!(
                    "metadata key {key:?} appears twice"
                )));
            }
            keys.insert(key);
        }
        Ok(UniqueStrings)
    }
}

/// Checks one tensor entry against the data region: offsets in range, dtype
/// F32 or F16, byte length `elements × dtype size`. Returns its span.
fn check_entry(name: &str, info: &RawInfo, data_len: usize) -> Result<(u64, u64), CheckpointError> {
    let [start, end] = info.data_offsets;
    if start > end || end > data_len as u64 {
        return Err(CheckpointError::OffsetsOutOfRange {
            name: name.to_string(),
            start,
            end,
            data_len,
        });
    }
    let Some(dtype) = Dtype::parse(&info.dtype) else {
        return Err(CheckpointError::BadDtype {
            name: name.to_string(),
            dtype: info.dtype.clone(),
            expected: "F32 or F16",
        });
    };
    let expected = info
        .shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d));
    if expected != Some(end - start) {
        return Err(CheckpointError::ByteLengthMismatch {
            name: name.to_string(),
            dtype: dtype.name(),
            shape: info.shape.clone(),
            bytes: end - start,
            expected: expected.unwrap_or(u64::MAX),
        });
    }
    Ok((start, end))
}

/// Runs every pre-check on a framed header and its data region.
pub(super) fn check_header(header: &str, data_len: usize) -> Result<(), CheckpointError> {
    let Tensors(tensors) =
        serde_json::from_str(header).map_err(|e| CheckpointError::HeaderJson {
            message: e.to_string(),
        })?;
    let mut spans: Vec<(u64, u64, &str)> = Vec::with_capacity(tensors.len());
    for (name, info) in &tensors {
        let (start, end) = check_entry(name, info, data_len)?;
        spans.push((start, end, name));
    }
    let mut names: Vec<&str> = tensors.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(CheckpointError::DuplicateTensor {
            name: w[0].to_string(),
        });
    }
    check_tiling(&mut spans, data_len as u64)
}

/// The spans must cover `[0, data_len)` exactly once.
fn check_tiling(spans: &mut [(u64, u64, &str)], data_len: u64) -> Result<(), CheckpointError> {
    spans.sort_unstable();
    let mut cursor = 0;
    let mut prev = "";
    for &(start, end, name) in spans.iter() {
        if start < cursor {
            return Err(CheckpointError::OverlappingTensors {
                name: name.to_string(),
                other: prev.to_string(),
            });
        }
        if start > cursor {
            return Err(CheckpointError::UncoveredData {
                start: cursor,
                end: start,
            });
        }
        cursor = end;
        prev = name;
    }
    if cursor != data_len {
        return Err(CheckpointError::UncoveredData {
            start: cursor,
            end: data_len,
        });
    }
    Ok(())
}
