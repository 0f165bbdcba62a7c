package adminsvc

import "github.com/gofiber/fiber/v2"

// registerWorkspaces adds workspaces and their members, at /admin/workspaces and /workspaces.
// Not built yet: this is filled in by the work on issue #5.
func (s *Service) registerWorkspaces(v1 fiber.Router) {}
