"""The cast: personas, their sprites, and the scenes they play.

- `personas.py`  characters that answer under their own name: who a message calls, the
                 personas, who posted what and each channel's webhook, in the database
- `sprites.py`   a persona's labelled alternate avatars: checked, stored, told to its model
- `scenes.py`    `/scene`: a scripted exchange of 2-3 personas, checked, and what each persona
                 is told before its line
"""

from tomori.cast.personas import Persona, PersonaStore, WebhookStore
from tomori.cast.scenes import Scene
from tomori.cast.sprites import Sprite

__all__ = ["Persona", "PersonaStore", "Scene", "Sprite", "WebhookStore"]
