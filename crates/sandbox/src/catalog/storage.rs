//! `storage.k8s.io/v1` (upstream's `pkg/registry/storage`): classes, CSI drivers and nodes,
//! attachments and capacities.

use k8s_openapi::api::storage::v1 as storage;

use super::resource;
use crate::kinds::{csi, volume};
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                allow_unconditional_update: false,
                default: csi::default_driver,
                validate: csi::validate_driver,
                ..typed::<storage::CSIDriver>()
            }),
            ..resource!("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", [], namespaced: false)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                allow_unconditional_update: false,
                validate: csi::validate_node,
                ..typed::<storage::CSINode>()
            }),
            ..resource!("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", [], namespaced: false)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                allow_unconditional_update: false,
                validate: csi::validate_capacity,
                ..typed::<storage::CSIStorageCapacity>()
            }),
            ..resource!("storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", [], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                default: volume::default_storage_class,
                validate: volume::validate_storage_class,
                read_by_admission: true,
                ..typed::<storage::StorageClass>()
            }),
            ..resource!("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", ["sc"], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                allow_unconditional_update: false,
                validate: csi::validate_attachment,
                ..typed::<storage::VolumeAttachment>()
            }),
            ..resource!("storage.k8s.io", "v1", "volumeattachments", "volumeattachment", "VolumeAttachment", [], namespaced: false)
        },
    ]
}
