-- The health of a metacel policy, for Argo CD (resource.customizations.health.ConfigMap): a
-- ConfigMap labelled metacel.dev/policy=true is judged by the state the runtime labels it with
-- (metacel.dev/state: runtime/policystatus). Running is Healthy; Invalid (the newest version
-- failed to load or conflicts with another policy) and RolledBack (its rollout failed) are
-- Degraded, as waiting will not change them; RollingOut, Waiting, NotSynced and no state yet are
-- Progressing. Every other ConfigMap is Healthy. The state is of the version the runtime last
-- read: right after a sync it may still be the previous version's.
local labels = obj.metadata.labels
if labels == nil or labels["metacel.dev/policy"] ~= "true" then
  return {status = "Healthy"}
end
local state = labels["metacel.dev/state"]
if state == nil then
  return {status = "Progressing", message = "waiting for metacel to load the policy"}
end
local message = state
local annotations = obj.metadata.annotations
if annotations ~= nil and annotations["metacel.dev/last-error"] ~= nil and annotations["metacel.dev/last-error"] ~= "" then
  message = state .. ": " .. annotations["metacel.dev/last-error"]
end
if state == "Running" then
  return {status = "Healthy", message = message}
end
if state == "Invalid" or state == "RolledBack" then
  return {status = "Degraded", message = message}
end
return {status = "Progressing", message = message}
