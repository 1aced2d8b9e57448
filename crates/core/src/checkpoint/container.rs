//! The safetensors container, read defensively in two passes over the same
//! bytes:
//!
//! 1. the project's own pre-checks ([`scan`]): framing, header shape,
//!    repeated names, dtypes, offsets, byte lengths and tiling, each refused
//!    with a specific [`CheckpointError`] that names the tensor or the bytes
//!    at fault, and with lengths checked against the bytes present before
//!    anything is allocated (the header is at most [`MAX_HEADER_LEN`]);
//! 2. the `safetensors` crate's parser ([`SafeTensors::read_metadata`]), whose
//!    result is what the loader uses: the `__metadata__` map
//!    ([`Metadata::metadata`]) and the tensor entries ([`Metadata::tensors`]),
//!    with the offsets it has validated. An error from it is mapped onto a
//!    [`CheckpointError`] by [`from_crate`].
//!
//! Layout: `u64` little-endian header length `N`, `N` bytes of UTF-8 JSON
//! (`{"__metadata__": {str: str}, name: {dtype, shape, data_offsets}}`),
//! then the data region, which the tensors' `data_offsets` must tile exactly.

mod scan;

use std::collections::BTreeMap;

use safetensors::tensor::{Metadata, TensorInfo};
use safetensors::{SafeTensorError, SafeTensors};

use super::error::CheckpointError;
use super::format::{Dtype, MAX_HEADER_LEN};

/// A tensor entry whose dtype is supported and whose bytes lie inside the
/// data region and match its declared shape.
#[derive(Debug)]
pub(super) struct Entry<'a> {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    pub bytes: &'a [u8],
}

/// A container whose framing, header and data tiling are valid.
#[derive(Debug)]
pub(super) struct Container<'a> {
    pub metadata: BTreeMap<String, String>,
    /// In data-region order.
    pub tensors: Vec<Entry<'a>>,
}

/// Parses and checks the container: the project's pre-checks first (so the
/// error, if any, is the specific one), then the crate's parser, whose
/// metadata map and tensor entries make the result.
pub(super) fn parse(bytes: &[u8]) -> Result<Container<'_>, CheckpointError> {
    let frame = scan::frame(bytes)?;
    scan::check_header(frame.header, frame.data.len())?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| from_crate(e, bytes))?;
    let metadata = header
        .metadata()
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Container {
        metadata,
        tensors: entries(&header, frame.data)?,
    })
}

/// The crate's tensor entries in data-region order (by offsets, then name),
/// with their bytes.
fn entries<'a>(header: &Metadata, data: &'a [u8]) -> Result<Vec<Entry<'a>>, CheckpointError> {
    let mut infos: Vec<(String, &TensorInfo)> = header.tensors().into_iter().collect();
    infos.sort_by(|(a, x), (b, y)| (x.data_offsets, a).cmp(&(y.data_offsets, b)));
    infos
        .into_iter()
        .map(|(name, info)| entry(name, info, data))
        .collect()
}

/// One of the crate's entries as an [`Entry`]. The pre-checks have refused
/// every dtype but F32/F16 and every offset outside `data`; both are
/// checked again here rather than trusted, so no input can panic.
fn entry<'a>(
    name: String,
    info: &TensorInfo,
    data: &'a [u8],
) -> Result<Entry<'a>, CheckpointError> {
    let (start, end) = info.data_offsets;
    let Some(bytes) = data.get(start..end) else {
        return Err(CheckpointError::OffsetsOutOfRange {
            name,
            start: start as u64,
            end: end as u64,
            data_len: data.len(),
        });
    };
    let Some(dtype) = Dtype::from_crate(info.dtype) else {
        return Err(CheckpointError::BadDtype {
            name,
            dtype: info.dtype.to_string(),
            expected: "F32 or F16",
        });
    };
    Ok(Entry {
        name,
        dtype,
        shape: info.shape.iter().map(|&d| d as u64).collect(),
        bytes,
    })
}

/// Maps an error of the crate's parser onto the [`CheckpointError`] that
/// says the same thing. After the pre-checks, the crate can still refuse a
/// header only on 32-bit targets, where its `usize` arithmetic is narrower
/// than ours (a dimension beyond `usize`; a tensor of 512 MiB or more, whose
/// size in bits overflows); the other arms keep the mapping total.
pub(super) fn from_crate(e: SafeTensorError, bytes: &[u8]) -> CheckpointError {
    let header_len = bytes
        .first_chunk::<8>()
        .map_or(0, |n| u64::from_le_bytes(*n));
    match e {
        SafeTensorError::HeaderTooSmall => CheckpointError::TooShort { len: bytes.len() },
        SafeTensorError::InvalidHeaderLength => CheckpointError::HeaderPastEnd {
            header_len,
            file_len: bytes.len(),
        },
        SafeTensorError::HeaderTooLarge => CheckpointError::HeaderTooLarge {
            header_len,
            max: MAX_HEADER_LEN,
        },
        SafeTensorError::InvalidHeader(utf8) => CheckpointError::HeaderNotUtf8 {
            offset: 8 + utf8.valid_up_to(),
        },
        SafeTensorError::InvalidHeaderDeserialization(json) | SafeTensorError::JsonError(json) => {
            CheckpointError::HeaderJson {
                message: json.to_string(),
            }
        }
        // Offsets, byte lengths and coverage: the crate names at most the
        // tensor, so its own words go into the message.
        other => CheckpointError::HeaderJson {
            message: other.to_string(),
        },
    }
}
