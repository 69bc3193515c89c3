import type { Operation } from '../src/registry/operation.js';
import createApiKey from './api-keys/create.js';
import updateApiKey from './api-keys/update.js';
import approvePost from './approvals/approve.js';
import listApprovals from './approvals/list.js';
import rejectPost from './approvals/reject.js';
import listApiKeys from './api-keys/list.js';
import revokeApiKey from './api-keys/revoke.js';
import listConnectedApps from './connected-apps/list.js';
import revokeConnectedApp from './connected-apps/revoke.js';
import updateConnectedApp from './connected-apps/update.js';
import connectBluesky from './integrations/connect-bluesky.js';
import connectIntegration from './integrations/connect.js';
import createIntegration from './integrations/create.js';
import disconnectIntegration from './integrations/disconnect.js';
import refreshIntegration from './integrations/refresh.js';
import selectIntegrationAccount from './integrations/select-account.js';
import listIntegrations from './integrations/list.js';
import listPlatforms from './platforms/list.js';
import listEvents from './events/list.js';
import createRecycleRule from './recycle-rules/create.js';
import deleteRecycleRule from './recycle-rules/delete.js';
import listRecycleEvents from './recycle-rules/events.js';
import getRecycleRule from './recycle-rules/get.js';
import listRecycleRules from './recycle-rules/list.js';
import updateRecycleRule from './recycle-rules/update.js';
import createWebhook from './webhooks/create.js';
import listWebhookDeliveries from './webhooks/deliveries.js';
import deleteWebhook from './webhooks/delete.js';
import listWebhooks from './webhooks/list.js';
import redeliverWebhook from './webhooks/redeliver.js';
import rotateWebhookSecret from './webhooks/rotate-secret.js';
import updateWebhook from './webhooks/update.js';
import createInvitation from './invitations/create.js';
import listInvitations from './invitations/list.js';
import revokeInvitation from './invitations/revoke.js';
import addMember from './members/add.js';
import listMembers from './members/list.js';
import createPost from './posts/create.js';
import deletePost from './posts/delete.js';
import duplicatePost from './posts/duplicate.js';
import getPost from './posts/get.js';
import listPosts from './posts/list.js';
import updatePost from './posts/update.js';
import removeMember from './members/remove.js';
import deleteSchedule from './schedules/delete.js';
import getSchedule from './schedules/get.js';
import listSchedules from './schedules/list.js';
import rescheduleSchedule from './schedules/reschedule.js';
import retrySchedule from './schedules/retry.js';
import createTag from './tags/create.js';
import getTag from './tags/get.js';
import listTags from './tags/list.js';
import getDailyUsage from './usage/daily.js';
import listUsageEvents from './usage/events.js';
import getUsage from './usage/summary.js';
import getWorkspace from './workspace/get.js';
import updateWorkspaceSettings from './workspace/settings.js';
import getCurrentUser from './users/me.js';
import completeUpload from './uploads/complete.js';
import deleteUpload from './uploads/delete.js';
import importUploadFromUrl from './uploads/from-url.js';
import importProviderMedia from './uploads/from-provider.js';
import searchMedia from './media/search.js';
import initiateUpload from './uploads/initiate.js';

/** Every operation of the service. Adding one is adding its file and a line here; no surface changes. */
export const operations: readonly Operation[] = [
  getCurrentUser,
  listTags,
  getTag,
  createTag,
  getUsage,
  listUsageEvents,
  listEvents,
  listWebhooks,
  createWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  listWebhookDeliveries,
  redeliverWebhook,
  getDailyUsage,
  createApiKey,
  listApiKeys,
  updateApiKey,
  revokeApiKey,
  listConnectedApps,
  updateConnectedApp,
  revokeConnectedApp,
  listMembers,
  addMember,
  removeMember,
  listInvitations,
  createInvitation,
  revokeInvitation,
  listIntegrations,
  listPlatforms,
  createIntegration,
  connectIntegration,
  connectBluesky,
  selectIntegrationAccount,
  refreshIntegration,
  disconnectIntegration,
  listPosts,
  getPost,
  createPost,
  updatePost,
  duplicatePost,
  deletePost,
  listApprovals,
  approvePost,
  rejectPost,
  listRecycleRules,
  getRecycleRule,
  createRecycleRule,
  updateRecycleRule,
  deleteRecycleRule,
  listRecycleEvents,
  listSchedules,
  getSchedule,
  deleteSchedule,
  retrySchedule,
  rescheduleSchedule,
  getWorkspace,
  updateWorkspaceSettings,
  initiateUpload,
  completeUpload,
  deleteUpload,
  importUploadFromUrl,
  searchMedia,
  importProviderMedia,
];
