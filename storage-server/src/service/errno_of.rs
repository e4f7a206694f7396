//! What a storage error travels as: the errno a client sees, with the error's sentence.
//! Its own module, below both the service and its recovery runtime, which both answer with it.

use iopath_fabric::frame::status::errno;
use iopath_fabric::rpc::ServiceError;

use crate::error::StorageError;

/// The errno a client sees for a storage error, with its sentence.
pub fn storage_error(error: StorageError) -> ServiceError {
    let code = match &error {
        StorageError::NoSuchObject { .. } => errno::ENOENT,
        StorageError::ObjectExists { .. } => errno::EEXIST,
        StorageError::ObjectTooLarge { .. } | StorageError::RequestTooLarge { .. } => errno::EFBIG,
        StorageError::EmptyWrite { .. } | StorageError::InvalidConfig { .. } => errno::EINVAL,
        StorageError::TooManyObjects { .. } | StorageError::TooManyClients { .. } => errno::ENOSPC,
        StorageError::NoSuchTarget { .. } => errno::ENODEV,
        StorageError::ClientOfAnotherNid { .. } => errno::EPERM,
        StorageError::ReplayOutOfOrder { .. } => errno::EPROTO,
        StorageError::TargetStopped { .. } => errno::ESHUTDOWN,
        // Bytes acknowledged and then dropped at recovery: an I/O error, as a bad block is.
        StorageError::DataLost { .. } => errno::EIO,
        StorageError::Injected { code, .. } => *code,
        _ => errno::EIO,
    };
    ServiceError::new(code, error.to_string())
}

impl From<StorageError> for ServiceError {
    fn from(error: StorageError) -> Self {
        storage_error(error)
    }
}
