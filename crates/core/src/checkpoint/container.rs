//! The safetensors container, read defensively: every length is checked
//! against the bytes actually present before anything is allocated, so a
//! damaged or hostile file costs at most its own size in memory.
//!
//! Layout: `u64` little-endian header length `N`, `N` bytes of UTF-8 JSON
//! (`{"__metadata__": {str: str}, name: {dtype, shape, data_offsets}}`),
//! then the data region, which the tensors' `data_offsets` must tile exactly.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::error::CheckpointError;
use super::MAX_HEADER_LEN;

/// The element types this format stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dtype {
    F32,
    F16,
}

impl Dtype {
    pub(super) fn parse(s: &str) -> Option<Dtype> {
        match s {
            "F32" => Some(Dtype::F32),
            "F16" => Some(Dtype::F16),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
        }
    }

    pub(super) fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 => 2,
        }
    }
}

/// One tensor entry of the header, as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInfo {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// A tensor entry whose dtype is supported and whose bytes lie inside the
/// data region and match its declared shape.
#[derive(Debug)]
pub(super) struct Entry<'a> {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    pub bytes: &'a [u8],
}

/// The parsed header: metadata and tensors in file order.
#[derive(Debug, Default)]
struct Header {
    metadata: BTreeMap<String, String>,
    tensors: Vec<(String, RawInfo)>,
}

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(HeaderVisitor)
    }
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of tensors and __metadata__")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut header = Header::default();
        let mut seen_metadata = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "__metadata__" {
                if seen_metadata {
                    return Err(de::Error::custom("__metadata__ appears twice"));
                }
                seen_metadata = true;
                header.metadata = map.next_value::<UniqueStrings>()?.0;
            } else {
                let info = map
                    .next_value::<RawInfo>()
                    .map_err(|e| de::Error::custom(format_args!("tensor {key:?}: {e}")))?;
                header.tensors.push((key, info));
            }
        }
        Ok(header)
    }
}

/// A `{str: str}` object that refuses repeated keys (serde's maps keep the
/// last silently).
struct UniqueStrings(BTreeMap<String, String>);

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
        let mut out = BTreeMap::new();
        while let Some((k, v)) = map.next_entry::<String, String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format_args!(
                    "metadata key {k:?} appears twice"
                )));
            }
            out.insert(k, v);
        }
        Ok(UniqueStrings(out))
    }
}

/// A container whose framing, header and data tiling are valid.
#[derive(Debug)]
pub(super) struct Container<'a> {
    pub metadata: BTreeMap<String, String>,
    pub tensors: Vec<Entry<'a>>,
}

/// Reads the framing and header; tensors are not yet checked.
fn read_header(bytes: &[u8]) -> Result<(Header, &[u8]), CheckpointError> {
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
    let text = std::str::from_utf8(header).map_err(|e| CheckpointError::HeaderNotUtf8 {
        offset: 8 + e.valid_up_to(),
    })?;
    let header = serde_json::from_str::<Header>(text).map_err(|e| CheckpointError::HeaderJson {
        message: e.to_string(),
    })?;
    Ok((header, data))
}

/// Parses and checks the container: supported dtypes, offsets inside the
/// data region and consistent with dtype × shape, no duplicates, and the
/// tensors tiling the data region without gap or overlap.
pub(super) fn parse(bytes: &[u8]) -> Result<Container<'_>, CheckpointError> {
    let (header, data) = read_header(bytes)?;
    let data_len = data.len();
    let mut spans: Vec<(u64, u64, usize)> = Vec::with_capacity(header.tensors.len());
    let mut tensors = Vec::with_capacity(header.tensors.len());
    for (name, info) in header.tensors {
        let [start, end] = info.data_offsets;
        if start > end || end > data_len as u64 {
            return Err(CheckpointError::OffsetsOutOfRange {
                name,
                start,
                end,
                data_len,
            });
        }
        let Some(dtype) = Dtype::parse(&info.dtype) else {
            return Err(CheckpointError::BadDtype {
                name,
                dtype: info.dtype,
                expected: "F32 or F16",
            });
        };
        let expected = info
            .shape
            .iter()
            .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d));
        if expected != Some(end - start) {
            return Err(CheckpointError::ByteLengthMismatch {
                name,
                dtype: dtype.name(),
                shape: info.shape,
                bytes: end - start,
                expected: expected.unwrap_or(u64::MAX),
            });
        }
        spans.push((start, end, tensors.len()));
        tensors.push(Entry {
            name,
            dtype,
            shape: info.shape,
            // start ≤ end ≤ data_len, so both fit in usize.
            bytes: &data[start as usize..end as usize],
        });
    }
    let mut names: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(CheckpointError::DuplicateTensor {
            name: w[0].to_string(),
        });
    }
    check_tiling(&mut spans, &tensors, data_len as u64)?;
    Ok(Container {
        metadata: header.metadata,
        tensors,
    })
}

/// The spans must cover `[0, data_len)` exactly once.
fn check_tiling(
    spans: &mut [(u64, u64, usize)],
    tensors: &[Entry<'_>],
    data_len: u64,
) -> Result<(), CheckpointError> {
    spans.sort_unstable();
    let mut cursor = 0;
    let mut prev: Option<usize> = None;
    for &(start, end, i) in spans.iter() {
        if start < cursor {
            let other = prev.map_or_else(String::new, |p| tensors[p].name.clone());
            return Err(CheckpointError::OverlappingTensors {
                name: tensors[i].name.clone(),
                other,
            });
        }
        if start > cursor {
            return Err(CheckpointError::UncoveredData {
                start: cursor,
                end: start,
            });
        }
        cursor = end;
        prev = Some(i);
    }
    if cursor != data_len {
        return Err(CheckpointError::UncoveredData {
            start: cursor,
            end: data_len,
        });
    }
    Ok(())
}
