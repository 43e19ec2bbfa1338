-- Argo CD health check for inference.networking.k8s.io/InferencePool (Gateway API Inference Extension v1).
-- Install under argocd-cm: resource.customizations.health.inference.networking.k8s.io_InferencePool
-- Reads what a Gateway controller writes per parent Gateway (api/v1/inferencepool_types.go@v1.6.0,
-- ParentStatus): Accepted (the Gateway takes the pool; False: NotSupportedByParent,
-- HTTPRouteNotAccepted) and ResolvedRefs (the endpointPickerRef resolves; False:
-- InvalidExtensionRef). A False for the current generation is Degraded (each condition's
-- observedGeneration, per metav1.Condition); Healthy once every parent has both True for the current
-- generation; otherwise (no parent yet, Pending, Unknown, a verdict on an older generation) Progressing.
local hs = {}
local generation = obj.metadata.generation or 0
local parents = {}
if obj.status ~= nil and obj.status.parents ~= nil then
  parents = obj.status.parents
end
if #parents == 0 then
  hs.status = "Progressing"
  hs.message = "No Gateway has taken this pool yet (is an HTTPRoute to it accepted?)"
  return hs
end
local waiting = nil
for _, parent in ipairs(parents) do
  local name = (parent.parentRef and parent.parentRef.name) or "?"
  local seen = {}
  for _, condition in ipairs(parent.conditions or {}) do
    -- each condition says which generation it judged: one of an older spec is no verdict on this one
    local current = condition.observedGeneration == nil or condition.observedGeneration >= generation
    if (condition.type == "Accepted" or condition.type == "ResolvedRefs") and condition.status == "False" and current then
      hs.status = "Degraded"
      hs.message = name .. ": " .. condition.type .. " False (" .. (condition.reason or "") .. "): " .. (condition.message or "")
      return hs
    end
    if condition.status == "True" and current then
      seen[condition.type] = true
    end
  end
  if waiting == nil and not (seen["Accepted"] and seen["ResolvedRefs"]) then
    waiting = name
  end
end
if waiting ~= nil then
  hs.status = "Progressing"
  hs.message = "Waiting for Gateway " .. waiting .. " to accept the pool and resolve its endpoint picker"
  return hs
end
hs.status = "Healthy"
hs.message = "Accepted by every Gateway, endpoint picker resolved"
return hs
