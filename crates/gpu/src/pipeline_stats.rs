//! The driver's own statistics of compiled pipelines (native Vulkan only;
//! `tinygpt bench --profile --pipeline-stats`): registers a lane, spills,
//! instruction counts — whatever the driver reports through
//! `VK_KHR_pipeline_executable_properties`. wgpu creates its pipelines
//! without asking for them, so each pipeline the engine compiled
//! ([`PipelineRegistry::compiled`](crate::PipelineRegistry::compiled)) is
//! compiled again here, on a Vulkan device of our own: the SPIR-V written
//! as wgpu's Vulkan backend writes it (naga 30, the pipeline's constants
//! applied, the engine's shader checks), the descriptor set layouts read
//! from the module's bindings.

use crate::registry::Compiled;
use ash::vk;
use std::collections::BTreeMap;
use std::ffi::CStr;

/// A pipeline's executables with their statistics, or why it has none.
pub type Stats = Result<Vec<Executable>, String>;

/// One executable the driver made of a pipeline, and its statistics.
#[derive(Clone, Debug)]
pub struct Executable {
    pub name: String,
    pub subgroup_size: u32,
    /// Statistic name → value (booleans as 0/1).
    pub stats: BTreeMap<String, f64>,
}

/// A Vulkan device of our own with pipeline statistics enabled.
struct Device {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    exe: ash::khr::pipeline_executable_properties::Device,
    name: String,
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every object made from them is destroyed already.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// The statistics of every pipeline in `pipelines` (or why it has none),
/// compiled on the first Vulkan device whose name contains `adapter` (the
/// wgpu adapter's name); an error if the driver offers none.
pub fn pipeline_stats(
    pipelines: &[Compiled],
    adapter: &str,
) -> Result<(String, Vec<Stats>), String> {
    let dev = open(adapter)?;
    let all = pipelines.iter().map(|c| compile(&dev, c)).collect();
    Ok((dev.name.clone(), all))
}

fn vk_err(what: &str) -> impl Fn(vk::Result) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn open(adapter: &str) -> Result<Device, String> {
    // SAFETY: the loader's entry points, used as Vulkan specifies; the
    // instance destroyed where no device is made from it.
    unsafe {
        let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        let instance = entry
            .create_instance(&info, None)
            .map_err(vk_err("vkCreateInstance"))?;
        let made = pick(&instance, adapter)
            .and_then(|(pd, name)| Ok((create_device(&instance, pd, &name)?, name)));
        let (device, name) = made.inspect_err(|_| instance.destroy_instance(None))?;
        let exe = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        Ok(Device {
            _entry: entry,
            instance,
            device,
            exe,
            name,
        })
    }
}

/// The first physical device whose name contains `adapter` (else the
/// first), if it offers Vulkan 1.3, and its name.
///
/// # Safety
/// `instance` is live.
unsafe fn pick(
    instance: &ash::Instance,
    adapter: &str,
) -> Result<(vk::PhysicalDevice, String), String> {
    let pds = instance
        .enumerate_physical_devices()
        .map_err(vk_err("physical devices"))?;
    let named = |pd: &vk::PhysicalDevice| {
        let props = instance.get_physical_device_properties(*pd);
        let name = props.device_name_as_c_str().unwrap_or(c"?");
        (name.to_string_lossy().into_owned(), props.api_version)
    };
    let found = pds.iter().find(|pd| named(pd).0.contains(adapter));
    let Some(&pd) = found.or(pds.first()) else {
        return Err("no Vulkan device".into());
    };
    let (name, api) = named(&pd);
    if api < vk::API_VERSION_1_3 {
        return Err(format!(
            "{name}: Vulkan 1.3 needed for the statistics' SPIR-V"
        ));
    }
    Ok((pd, name))
}

/// A device of `pd` with pipeline statistics, cooperative matrices and
/// robustness2 where offered, and every feature the device offers — as
/// wgpu asks for what it uses (robust buffer access included: it changes
/// the code).
///
/// # Safety
/// `instance` is live and `pd` one of its devices.
unsafe fn create_device(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    name: &str,
) -> Result<ash::Device, String> {
    let exts = instance
        .enumerate_device_extension_properties(pd)
        .map_err(vk_err("extensions"))?;
    let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
    if !has(ash::khr::pipeline_executable_properties::NAME) {
        return Err(format!("{name}: the driver offers no pipeline statistics (VK_KHR_pipeline_executable_properties)"));
    }
    let mut names = vec![ash::khr::pipeline_executable_properties::NAME.as_ptr()];
    let (coop, robust) = (
        has(ash::khr::cooperative_matrix::NAME),
        has(ash::ext::robustness2::NAME),
    );
    if coop {
        names.push(ash::khr::cooperative_matrix::NAME.as_ptr());
    }
    if robust {
        names.push(ash::ext::robustness2::NAME.as_ptr());
    }
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut fexe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    let mut fcoop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut frob = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut features = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut f11)
        .push_next(&mut f12)
        .push_next(&mut f13)
        .push_next(&mut fexe);
    if coop {
        features = features.push_next(&mut fcoop);
    }
    if robust {
        features = features.push_next(&mut frob);
    }
    instance.get_physical_device_features2(pd, &mut features);
    let family = instance
        .get_physical_device_queue_family_properties(pd)
        .iter()
        .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or("no compute queue")? as u32;
    let prio = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&prio)];
    let info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&names)
        .push_next(&mut features);
    instance
        .create_device(pd, &info, None)
        .map_err(vk_err("vkCreateDevice"))
}

/// The SPIR-V version wgpu 30 writes for a Vulkan 1.3 device.
const SPV_VERSION: (u8, u8) = (1, 6);

/// The pipeline's SPIR-V as wgpu 30's Vulkan backend writes it.
fn spirv(c: &Compiled) -> Result<(Vec<u32>, naga::Module), String> {
    use naga::back::spv;
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(c.wgsl).map_err(|e| e.emit_to_string(c.wgsl))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(c.wgsl))?;
    let constants = c
        .constants
        .iter()
        .map(|&(n, v)| (n.to_string(), v))
        .collect();
    let stage = Some((naga::ShaderStage::Compute, c.entry));
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, stage, &constants)
            .map_err(|e| format!("overrides: {e}"))?;
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let policy = if c.checks.bounds { restrict } else { unchecked };
    let mut options = spv::Options {
        lang_version: SPV_VERSION,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: policy,
            buffer: policy,
            image_load: policy,
            binding_array: unchecked,
        },
        zero_initialize_workgroup_memory: match c.checks.zero_workgroup_memory {
            true => spv::ZeroInitializeWorkgroupMemoryMode::Native,
            false => spv::ZeroInitializeWorkgroupMemoryMode::None,
        },
        force_loop_bounding: c.checks.loop_bounding,
        emit_int_div_checks: c.checks.int_div,
        ..spv::Options::default()
    };
    options.flags.remove(spv::WriterFlags::DEBUG);
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: c.entry.to_string(),
    };
    let words = spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("SPIR-V: {e}"))?;
    Ok((words, module.into_owned()))
}

/// The module's buffer bindings by group: (binding, descriptor type).
fn bindings(
    module: &naga::Module,
) -> Result<BTreeMap<u32, Vec<(u32, vk::DescriptorType)>>, String> {
    let mut groups: BTreeMap<u32, Vec<(u32, vk::DescriptorType)>> = BTreeMap::new();
    for (_, g) in module.global_variables.iter() {
        let Some(b) = &g.binding else { continue };
        let ty = match g.space {
            naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
            naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
            other => return Err(format!("binding {}:{} in {other:?}", b.group, b.binding)),
        };
        groups.entry(b.group).or_default().push((b.binding, ty));
    }
    Ok(groups)
}

fn compile(dev: &Device, c: &Compiled) -> Stats {
    let (words, module) = spirv(c)?;
    let groups = bindings(&module)?;
    let d = &dev.device;
    // SAFETY: objects made here, destroyed here, on one thread.
    unsafe {
        let shader = d
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .map_err(vk_err("vkCreateShaderModule"))?;
        let last = groups.keys().next_back().map_or(0, |g| g + 1);
        let mut sets = Vec::new();
        for g in 0..last {
            let binds: Vec<_> = (groups.get(&g).into_iter().flatten())
                .map(|&(b, ty)| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(ty)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds);
            sets.push(
                d.create_descriptor_set_layout(&info, None)
                    .map_err(vk_err("set layout"))?,
            );
        }
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&sets),
                None,
            )
            .map_err(vk_err("pipeline layout"))?;
        let entry = std::ffi::CString::new(c.entry).map_err(|e| e.to_string())?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(shader)
            .name(&entry);
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)
            .stage(stage)
            .layout(layout);
        let made = d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None);
        let result = match made {
            Ok(p) => read_stats(dev, p[0]).inspect(|_| d.destroy_pipeline(p[0], None)),
            Err((_, e)) => Err(format!("vkCreateComputePipelines: {e}")),
        };
        d.destroy_pipeline_layout(layout, None);
        for s in sets {
            d.destroy_descriptor_set_layout(s, None);
        }
        d.destroy_shader_module(shader, None);
        result
    }
}

/// # Safety
/// `pipeline` made on `dev` with CAPTURE_STATISTICS_KHR.
unsafe fn read_stats(dev: &Device, pipeline: vk::Pipeline) -> Result<Vec<Executable>, String> {
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    let props = dev
        .exe
        .get_pipeline_executable_properties(&info)
        .map_err(vk_err("executables"))?;
    let mut out = Vec::new();
    for (i, p) in props.iter().enumerate() {
        let which = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(i as u32);
        let mut stats = BTreeMap::new();
        for s in dev
            .exe
            .get_pipeline_executable_statistics(&which)
            .map_err(vk_err("statistics"))?
        {
            let name = s
                .name_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy()
                .into_owned();
            let v = match s.format {
                vk::PipelineExecutableStatisticFormatKHR::BOOL32 => f64::from(s.value.b32),
                vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64 as f64,
                vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as f64,
                _ => s.value.f64,
            };
            stats.insert(name, v);
        }
        let name = p
            .name_as_c_str()
            .unwrap_or(c"?")
            .to_string_lossy()
            .into_owned();
        out.push(Executable {
            name,
            subgroup_size: p.subgroup_size,
            stats,
        });
    }
    Ok(out)
}
