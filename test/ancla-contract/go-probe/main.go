// Runs Ancla's Go SDK, unchanged, against a Slipway server: every exported call once, in the
// order a user scripting a first deploy would make them. Prints one JSON line: the calls that
// succeeded, and for each that failed, its error. Built by test/ancla-contract/real-sdks.test.ts.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	ancla "github.com/sidequest-labs/ancla-go"
)

type report struct {
	Done   []string          `json:"done"`
	Failed map[string]string `json:"failed"`
}

func main() {
	ctx := context.Background()
	server, key, repo := os.Getenv("SERVER"), os.Getenv("KEY"), os.Getenv("REPO")
	c := ancla.New(key, ancla.WithServer(server))
	r := report{Failed: map[string]string{}}
	step := func(name string, err error) bool {
		if err != nil {
			r.Failed[name] = err.Error()
			return false
		}
		r.Done = append(r.Done, name)
		return true
	}
	defer func() {
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}()

	ws, err := c.CreateWorkspace(ctx, "Gopher")
	if !step("CreateWorkspace", err) {
		return
	}
	_, err = c.ListWorkspaces(ctx)
	step("ListWorkspaces", err)
	_, err = c.GetWorkspace(ctx, ws.Slug)
	step("GetWorkspace", err)
	_, err = c.UpdateWorkspace(ctx, ws.Slug, "Gopher Co")
	step("UpdateWorkspace", err)

	proj, err := c.CreateProject(ctx, ws.Slug, "Burrow")
	if !step("CreateProject", err) {
		return
	}
	_, err = c.ListProjects(ctx, ws.Slug)
	step("ListProjects", err)
	_, err = c.GetProject(ctx, ws.Slug, proj.Slug)
	step("GetProject", err)
	_, err = c.UpdateProject(ctx, ws.Slug, proj.Slug, "Burrow Two")
	step("UpdateProject", err)

	env, err := c.CreateEnvironment(ctx, ws.Slug, proj.Slug, "staging")
	if !step("CreateEnvironment", err) {
		return
	}
	_, err = c.ListEnvironments(ctx, ws.Slug, proj.Slug)
	step("ListEnvironments", err)
	_, err = c.GetEnvironment(ctx, ws.Slug, proj.Slug, env.Slug)
	step("GetEnvironment", err)

	svc, err := c.CreateService(ctx, ws.Slug, proj.Slug, env.Slug, "web", "wind")
	if !step("CreateService", err) {
		return
	}
	_, err = c.ListServices(ctx, ws.Slug, proj.Slug, env.Slug)
	step("ListServices", err)
	branch := "main"
	_, err = c.UpdateService(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug, ancla.UpdateServiceOptions{GithubRepository: &repo, AutoDeployBranch: &branch})
	step("UpdateService", err)
	_, err = c.GetService(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug)
	step("GetService", err)
	variable, err := c.SetConfig(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug, "GREETING", "from go", false)
	step("SetConfig", err)
	_, err = c.ListConfig(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug)
	step("ListConfig", err)

	// The SDK documents DeployService, ScaleService and GetServiceStatus as taking the service's id.
	started, err := c.DeployService(ctx, ws.Slug, proj.Slug, env.Slug, svc.ID)
	if !step("DeployService", err) {
		return
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, err := c.GetServiceStatus(ctx, ws.Slug, proj.Slug, env.Slug, svc.ID)
		if err != nil {
			step("GetServiceStatus", err)
			return
		}
		if status.Deploy != nil && (status.Deploy.Status == "success" || status.Deploy.Status == "failed") {
			if status.Deploy.Status != "success" {
				step("GetServiceStatus", fmt.Errorf("deploy ended %s", status.Deploy.Status))
				return
			}
			step("GetServiceStatus", nil)
			break
		}
		if time.Now().After(deadline) {
			step("GetServiceStatus", fmt.Errorf("deploy did not settle"))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	builds, err := c.ListBuilds(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug)
	if step("ListBuilds", err) && (len(builds.Items) == 0 || !builds.Items[0].Built) {
		r.Failed["ListBuilds"] = "no built build listed"
	}
	buildLog, err := c.GetBuildLog(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug, started.Version)
	if step("GetBuildLog", err) && buildLog.Status != "success" {
		r.Failed["GetBuildLog"] = "status " + buildLog.Status
	}
	_, err = c.ListDeploys(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug)
	step("ListDeploys", err)

	// The deploy's id as Ancla's CLI reads it (a bare array on the same path), for the two calls that take it.
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/workspaces/%s/projects/%s/envs/%s/services/%s/deploys/", server, ws.Slug, proj.Slug, env.Slug, svc.Slug), nil)
	req.Header.Set("X-API-Key", key)
	var deploys []ancla.Deploy
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&deploys)
		resp.Body.Close()
	}
	if len(deploys) > 0 {
		deploy, err := c.GetDeploy(ctx, ws.Slug, proj.Slug, env.Slug, deploys[0].ID)
		if step("GetDeploy", err) && !deploy.Complete {
			r.Failed["GetDeploy"] = "not complete"
		}
		_, err = c.GetDeployLog(ctx, ws.Slug, proj.Slug, env.Slug, deploys[0].ID)
		step("GetDeployLog", err)
	}
	step("ScaleService", c.ScaleService(ctx, ws.Slug, proj.Slug, env.Slug, svc.ID, map[string]int{"web": 1}))
	_, err = c.TriggerBuild(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug)
	step("TriggerBuild", err)
	if variable != nil {
		step("DeleteConfig", c.DeleteConfig(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug, variable.ID))
	}
	step("DeleteService", c.DeleteService(ctx, ws.Slug, proj.Slug, env.Slug, svc.Slug))

	// Deleting a project or a workspace: Slipway deletes only empty ones, so empty ones are made for it.
	empty, err := c.CreateProject(ctx, ws.Slug, "Empty")
	if err == nil {
		step("DeleteProject", c.DeleteProject(ctx, ws.Slug, empty.Slug))
	}
	scratch, err := c.CreateWorkspace(ctx, "Scratch")
	if err == nil {
		step("DeleteWorkspace", c.DeleteWorkspace(ctx, scratch.Slug))
	}
}
