package adminsvc

import (
	"encoding/json"
	"fmt"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// maxDeployments bounds an Azure virtual key's deploymentConfig.
const maxDeployments = 64

var deploymentFields = []string{"deploymentName", "apiVersion", "alias", "is_default"}

// parseDeploymentConfig reads an azure-openai virtual key's
// deploymentConfig: 1 to 64 {deploymentName*, apiVersion, alias,
// is_default} objects, each answering to a different model (its alias,
// else its deployment name), at most one the default. null gives nil.
func parseDeploymentConfig(raw json.RawMessage, param string, p *problems) []core.AzureDeployment {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 || len(items) > maxDeployments {
		p.add(param, "must be an array of 1-%d {deploymentName, apiVersion, alias, is_default} objects", maxDeployments)
		return nil
	}
	out := make([]core.AzureDeployment, 0, len(items))
	models := map[string]int{}
	def := -1
	for i, it := range items {
		at := fmt.Sprintf("%s[%d]", param, i)
		unknownFields(it, at, deploymentFields, p)
		var d core.AzureDeployment
		if strInto(it, at, "deploymentName", &d.Name, true, 64, p) && d.Name != "" {
			if msg := core.CheckAzure(core.AzureDeploymentID, d.Name); msg != "" {
				p.add(at+".deploymentName", "%s", msg)
			}
		}
		if strInto(it, at, "apiVersion", &d.APIVersion, false, 64, p) && d.APIVersion != "" {
			if msg := core.CheckAzure(core.AzureAPIVersion, d.APIVersion); msg != "" {
				p.add(at+".apiVersion", "%s", msg)
			}
		}
		strInto(it, at, "alias", &d.Alias, false, 128, p)
		if v, ok := it["is_default"]; ok && string(v) != "null" && json.Unmarshal(v, &d.IsDefault) != nil {
			p.add(at+".is_default", "must be true or false")
		}
		if d.IsDefault {
			if def >= 0 {
				p.add(at+".is_default", "only one deployment may be the default; %s[%d] already is", param, def)
			}
			def = i
		}
		if m := d.Model(); m != "" {
			if j, dup := models[m]; dup {
				p.add(at, "answers to model %q, as %s[%d] does; give one of them another alias", m, param, j)
			}
			models[m] = i
		}
		out = append(out, d)
	}
	return out
}

// checkDeploymentUse refuses a deploymentConfig on a virtual key that is
// not azure-openai's, or whose configurations also set one
// azure_deployment_id (which of the two would be meant?).
func checkDeploymentUse(deps []core.AzureDeployment, provider string, cfg store.ProviderConfig, p *problems) {
	switch {
	case len(deps) == 0:
	case provider != core.AzureProvider:
		p.add("deploymentConfig", "is only for provider %s", core.AzureProvider)
	case cfg.AzureDeploymentID != "":
		p.add("deploymentConfig", "cannot be combined with configurations.azure_deployment_id; list that deployment in deploymentConfig instead")
	}
}
