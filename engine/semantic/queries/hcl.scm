; HCL/Terraform: definitions only (blocks named by type and labels).
(config_file (body (block) @def.module))
