{
  'targets': [
    {
      'target_name': 'copy_source',
      'type': 'none',
      'actions': [{
        'action_name': 'copy_source',
        'inputs': ['addon.c'],
        'outputs': ['<(SHARED_INTERMEDIATE_DIR)/native-addon/addon.c'],
        'action': ['node', '-e', 'require("fs").cpSync(process.argv[1], process.argv[2])', 'addon.c', '<(SHARED_INTERMEDIATE_DIR)/native-addon/addon.c'],
      }],
    },
    {
      'target_name': 'addon',
      'dependencies': ['copy_source'],
      'sources': ['<(SHARED_INTERMEDIATE_DIR)/native-addon/addon.c'],
    },
  ],
}
