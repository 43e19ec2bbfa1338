-- Argo CD health check for leaderworkerset.x-k8s.io/LeaderWorkerSet.
-- Install under argocd-cm: resource.customizations.health.leaderworkerset.x-k8s.io_LeaderWorkerSet
-- Healthy once the controller has seen the current spec and every group is ready and updated;
-- Progressing while groups start, scale or roll; Degraded never (LWS has no failure condition:
-- a group that cannot start stays not ready, which Argo CD then reports as Progressing).
local hs = {}
local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the LeaderWorkerSet controller"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end
local wanted = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  wanted = obj.spec.replicas
end
local ready = status.readyReplicas or 0
local updated = status.updatedReplicas or 0
local available = false
local updating = false
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Available" and condition.status == "True" then
      available = true
    end
    if condition.type == "UpdateInProgress" and condition.status == "True" then
      updating = true
    end
  end
end
if updating or updated < wanted then
  hs.status = "Progressing"
  hs.message = "Rolling update: " .. updated .. " of " .. wanted .. " groups updated, " .. ready .. " ready"
  return hs
end
if available and ready >= wanted then
  hs.status = "Healthy"
  hs.message = ready .. " of " .. wanted .. " groups ready"
  return hs
end
hs.status = "Progressing"
hs.message = ready .. " of " .. wanted .. " groups ready"
return hs
