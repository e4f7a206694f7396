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
        StorageError::DirectoryInUse { .. } => errno::EBUSY,
        // Bytes acknowledged and then dropped at recovery: an I/O error, as a bad block is.
        StorageError::DataLost { .. } => errno::EIO,
        StorageError::Injected { code, .. } => *code,
        // A full file system under the target: the client is told it is full, as write(2)
        // says, not that the disk failed.
        StorageError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
            errno::ENOSPC
        }
        _ => errno::EIO,
    };
    ServiceError::new(code, error.to_string())
}

impl From<StorageError> for ServiceError {
    fn from(error: StorageError) -> Self {
        storage_error(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_system_is_enospc_and_another_io_error_eio() {
        let io = |raw| StorageError::Io {
            op: "write object",
            path: "ost0/objects/0x1".into(),
            source: std::io::Error::from_raw_os_error(raw),
        };
        assert_eq!(storage_error(io(28)).code, errno::ENOSPC);
        assert_eq!(storage_error(io(5)).code, errno::EIO);
    }
}
