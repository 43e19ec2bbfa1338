-- Argo CD health check for leaderworkerset.x-k8s.io/LeaderWorkerSet.
-- Install under argocd-cm: resource.customizations.health.leaderworkerset.x-k8s.io_LeaderWorkerSet
-- Reads the conditions the LWS controller sets (kubernetes-sigs/lws v0.10.0,
-- pkg/controllers/leaderworkerset_controller.go updateConditions and makeCondition):
--   Available (AllGroupsReady): every group below spec.replicas is ready and every group from the
--     rolling-update partition on is updated and ready; so a finished partitioned rollout and
--     zero replicas are Healthy;
--   UpdateInProgress (GroupsUpdating) and Progressing (GroupsProgressing): groups start or roll.
-- Each condition carries the generation it was computed for; status.observedGeneration exists only
-- from LWS v0.9 (lws PR #807), so the conditions' own generation is used before it.
-- The controller exposes no failure condition in v0.10.0 (failures are Events): a Failed or
-- Degraded condition, should one appear, is Degraded; otherwise a group that cannot start stays
-- Progressing.
local hs = {}
local status = obj.status
if status == nil or status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the LeaderWorkerSet controller"
  return hs
end
local generation = obj.metadata.generation or 0
local observed = status.observedGeneration
local current = {}
for _, condition in ipairs(status.conditions) do
  if condition.status == "True" then
    current[condition.type] = condition
    if observed == nil or (condition.observedGeneration or 0) > observed then
      observed = condition.observedGeneration
    end
  end
end
for _, failure in ipairs({"Failed", "Degraded"}) do
  if current[failure] ~= nil then
    hs.status = "Degraded"
    hs.message = current[failure].message or failure
    return hs
  end
end
if (observed or 0) < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end
local ready = status.readyReplicas or 0
local replicas = 0
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  replicas = obj.spec.replicas
end
if current["UpdateInProgress"] ~= nil then
  hs.status = "Progressing"
  hs.message = "Rolling update: " .. (status.updatedReplicas or 0) .. " groups updated, " .. ready .. " of " .. replicas .. " ready"
  return hs
end
if current["Available"] ~= nil then
  hs.status = "Healthy"
  hs.message = ready .. " of " .. replicas .. " groups ready"
  return hs
end
hs.status = "Progressing"
hs.message = ready .. " of " .. replicas .. " groups ready"
return hs
