-- The health of a metacel parent, for Argo CD (resource.customizations.health.<group>_<Kind>, or
-- health.lua under resource.customizations for a group/kind pattern: docs/gitops.md).
-- It judges any kind a policy syncs by the conditions metacel writes on every parent (Synced,
-- Ready: runtime/contract), never by the kind's name. It uses no Lua library but the base one:
-- Argo CD runs health checks without the standard libraries unless useOpenLibs is set.
local hs = {status = "Progressing", message = "waiting for metacel to sync the parent"}

local function condition(conditions, type)
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function said(c)
  local out = c.reason or ""
  if c.message ~= nil and c.message ~= "" then
    out = out .. ": " .. c.message
  end
  return out
end

if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed ~= generation then
  hs.message = "metacel has not synced generation " .. generation .. " yet (status of generation " .. observed .. ")"
  return hs
end
local synced = condition(obj.status.conditions, "Synced")
local ready = condition(obj.status.conditions, "Ready")
if synced == nil or ready == nil then
  return hs
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration ~= generation then
  hs.message = "the Ready condition is of generation " .. ready.observedGeneration .. ", the parent is at " .. generation
  return hs
end
if synced.status == "False" then
  -- the last sync failed (ValidationFailed, EvaluationError, InvalidChild, ApplyFailed, ...):
  -- it is not retried until the parent, its inputs or the policy change
  hs.status = "Degraded"
  hs.message = said(synced)
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(ready)
  return hs
end
if ready.status == "False" and (ready.reason == "ChildFailed" or ready.reason == "DeletionBlocked") then
  -- a child failed (it will not become ready by waiting), or the deletion is held up
  hs.status = "Degraded"
  hs.message = said(ready)
  return hs
end
-- Ready False (ChildrenNotReady, NoChildIncluded, ParentNotReady, ReadyWhenFailed) or Unknown
hs.message = said(ready)
return hs
